#include "scale/controller.h"

#include <gtest/gtest.h>

#include "testing/fake_orchestrator.h"

namespace gpuscale::scale {
namespace {

using testing::FakeOrchestrator;
using testing::ScriptedPolicy;

struct Fixture {
  explicit Fixture(int slots, int min = 1, int max = 8) : orchestrator(slots, Seconds{60}) {
    auto p = std::make_unique<ScriptedPolicy>(min, max);
    policy = p.get();
    controller =
        std::make_unique<Controller>(std::move(p), orchestrator, ControllerConfig{{Seconds{120}}});
  }
  FakeOrchestrator orchestrator;
  ScriptedPolicy* policy;
  std::unique_ptr<Controller> controller;
};

TEST(ControllerTest, StartsReplicasUntilReady) {
  Fixture f(8);
  f.policy->desired = 3;
  auto tick = f.controller->Tick(Seconds{0}, {});
  EXPECT_EQ(tick.started, 3);
  EXPECT_EQ(f.orchestrator.Count(ReplicaPhase::kStarting), 3);
  f.orchestrator.Advance(Seconds{60});
  tick = f.controller->Tick(Seconds{60}, {});
  EXPECT_EQ(tick.ready_replicas, 3);
  EXPECT_TRUE(tick.actions.empty());
  EXPECT_EQ(f.policy->inputs.back().ready_replicas, 3);
  EXPECT_EQ(f.policy->inputs.back().now, Seconds{60});
}

// A mixed fleet: the policy sees the replicas' capacity beside their count, draining ones
// left out of the current capacity as they are of the count.
TEST(ControllerTest, PassesTheFleetsCapacityToThePolicy) {
  Fixture f(8);
  f.orchestrator.next_capacity = 0.5;
  f.policy->desired = 2;
  f.controller->Tick(Seconds{0}, {});  // starts two (a new replica is assumed to bring 1)
  f.orchestrator.Advance(Seconds{60});
  f.controller->Tick(Seconds{60}, {});  // 1 unit of 2: starts one more
  const ScalingInput& seen = f.policy->inputs.back();
  EXPECT_EQ(seen.current_replicas, 2);
  EXPECT_EQ(seen.ready_replicas, 2);
  EXPECT_DOUBLE_EQ(seen.current_capacity.value_or(-1), 1.0);
  EXPECT_DOUBLE_EQ(seen.ready_capacity.value_or(-1), 1.0);
  f.controller->Tick(Seconds{61}, {});
  EXPECT_EQ(f.policy->inputs.back().current_replicas, 3);
  EXPECT_DOUBLE_EQ(f.policy->inputs.back().current_capacity.value_or(-1), 1.5);
  EXPECT_DOUBLE_EQ(f.policy->inputs.back().ready_capacity.value_or(-1), 1.0);
}

TEST(ControllerTest, ClampsDecisionToPolicyBounds) {
  Fixture f(8, 2, 4);
  f.policy->desired = 10;
  EXPECT_EQ(f.controller->Tick(Seconds{0}, {}).desired_replicas, 4);
  f.policy->desired = 0;
  EXPECT_EQ(f.controller->Tick(Seconds{1}, {}).desired_replicas, 2);
}

TEST(ControllerTest, PendingWhenNoGpusThenPlacedWhenFreed) {
  Fixture f(1);
  f.policy->desired = 2;
  f.controller->Tick(Seconds{0}, {});
  EXPECT_EQ(f.orchestrator.Count(ReplicaPhase::kPending), 1);
  auto tick = f.controller->Tick(Seconds{15}, {});
  EXPECT_TRUE(tick.errors.empty()) << tick.errors.front();
  EXPECT_EQ(tick.current_replicas, 2);  // pending counts: no second start
  EXPECT_EQ(tick.started, 0);
  f.orchestrator.set_slots(2);
  f.controller->Tick(Seconds{30}, {});
  EXPECT_EQ(f.orchestrator.Count(ReplicaPhase::kStarting), 2);
}

TEST(ControllerTest, DrainsBeforeStopping) {
  Fixture f(8);
  f.policy->desired = 2;
  f.controller->Tick(Seconds{0}, {});
  f.orchestrator.Advance(Seconds{60});
  f.orchestrator.SetOutstanding("r0", 3);
  f.orchestrator.SetOutstanding("r1", 5);
  f.policy->desired = 1;
  f.controller->Tick(Seconds{60}, {});
  EXPECT_EQ(f.orchestrator.Count(ReplicaPhase::kDraining), 1);
  f.controller->Tick(Seconds{75}, {});
  EXPECT_EQ(f.orchestrator.Count(ReplicaPhase::kDraining), 1);  // still has requests
  f.orchestrator.SetOutstanding("r0", 0);
  auto tick = f.controller->Tick(Seconds{90}, {});
  EXPECT_EQ(tick.stopped, 1);
  EXPECT_EQ(f.orchestrator.ListReplicas().size(), 1u);
  EXPECT_EQ(f.orchestrator.ListReplicas()[0].id, "r1");
}

TEST(ControllerTest, RecoversFromCrashAndFailedStart) {
  Fixture f(8);
  f.policy->desired = 2;
  f.controller->Tick(Seconds{0}, {});
  f.orchestrator.Advance(Seconds{60});
  f.orchestrator.Crash("r0");
  f.orchestrator.FailNextStart();
  auto tick = f.controller->Tick(Seconds{60}, {});
  ASSERT_EQ(tick.errors.size(), 1u);
  EXPECT_NE(tick.errors[0].find("unavailable"), std::string::npos) << tick.errors[0];
  tick = f.controller->Tick(Seconds{75}, {});
  EXPECT_EQ(tick.started, 1);
  f.orchestrator.Advance(Seconds{135});
  EXPECT_EQ(f.controller->Tick(Seconds{135}, {}).ready_replicas, 2);
}

}  // namespace
}  // namespace gpuscale::scale
