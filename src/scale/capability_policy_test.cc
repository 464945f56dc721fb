#include "scale/capability_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::scale {
namespace {

using ::testing::HasSubstr;

const AdapterCapacity kCpuAdapter{"cpu-pool", 4, 1, {}};
const AdapterCapacity kGpuAdapter{"gpu-pool", 4, 1, {"gpu"}};

CapabilityPolicy MakePolicy(int min_replicas = 0, int max_replicas = 10) {
  return CapabilityPolicy(CapabilityPolicyConfig{min_replicas, max_replicas, 5, 0.5});
}

ScalingInput CapabilityInput(std::vector<TaskDemand> tasks, std::vector<WorkerGroup> groups,
                             std::vector<AdapterCapacity> adapters = {kCpuAdapter, kGpuAdapter}) {
  ScalingInput input;
  input.current_replicas = static_cast<int>(groups.size());
  input.ready_replicas = input.current_replicas;
  input.tasks = std::move(tasks);
  input.groups = std::move(groups);
  input.adapters = std::move(adapters);
  return input;
}

WorkerGroup Cpu(std::string id, int workers = 1) {
  return {std::move(id), "cpu-pool", {}, workers};
}
WorkerGroup Gpu(std::string id, int workers = 1) {
  return {std::move(id), "gpu-pool", {"gpu"}, workers};
}

struct CapabilityCase {
  const char* name;
  ScalingInput input;
  int expected_groups;
  std::vector<std::string> expected_actions;  // "start <adapter> {caps}" / "shutdown <id>"
};

std::vector<std::string> Describe(const std::vector<GroupAction>& actions) {
  std::vector<std::string> out;
  for (const GroupAction& a : actions) {
    if (a.kind == GroupAction::Kind::kStart) {
      std::string caps;
      for (const auto& c : a.capabilities) caps += (caps.empty() ? "" : ",") + c;
      out.push_back("start " + a.adapter + " {" + caps + "}");
    } else {
      out.push_back("shutdown " + a.group_id);
    }
  }
  return out;
}

// The capability scenario of Scaler's scaling policies and its guard rails, one row each.
TEST(CapabilityPolicyTest, ScalesEachCapabilitySetIndependently) {
  std::vector<CapabilityCase> cases;
  cases.push_back({"no GPU worker: request a {gpu} group",
                   CapabilityInput({{{}, 2, 0}, {{"gpu"}, 50, 0}}, {Cpu("c1")}),
                   2,
                   {"start gpu-pool {gpu}"}});
  cases.push_back({"12 gpu tasks on 2 gpu workers: 6 > 5",
                   CapabilityInput({{{"gpu"}, 10, 2}}, {Gpu("g1"), Gpu("g2")}),
                   3,
                   {"start gpu-pool {gpu}"}});
  cases.push_back({"10 gpu tasks on 2 gpu workers: 5 holds",
                   CapabilityInput({{{"gpu"}, 10, 0}}, {Gpu("g1"), Gpu("g2")}),
                   2,
                   {}});
  cases.push_back({"idle gpu group shuts down, cpu keeps running",
                   CapabilityInput({{{}, 2, 0}}, {Cpu("c1"), Gpu("g1")}),
                   1,
                   {"shutdown g1"}});
  cases.push_back(
      {"superset group serves subset tasks",
       CapabilityInput({{{"gpu"}, 3, 0}}, {{"big", "gpu-pool", {"gpu", "high_memory"}, 1}}),
       1,
       {}});
  cases.push_back({"last group able to serve pending tasks stays",
                   CapabilityInput({{{"gpu"}, 1, 0}}, {Gpu("g1", 4)}),
                   1,
                   {}});
  cases.push_back({"no scale-in that would trigger a scale-up",
                   CapabilityInput({{{"gpu"}, 8, 0}}, {Gpu("small", 1), Gpu("large", 20)}),
                   2,
                   {}});
  cases.push_back({"scale-in of one of two idle-ish groups",
                   CapabilityInput({{{"gpu"}, 1, 0}}, {Gpu("g1", 2), Gpu("g2", 2)}),
                   1,
                   {"shutdown g2"}});
  cases.push_back({"{} tasks overflowing a gpu group start a cpu group",
                   CapabilityInput({{{}, 30, 0}}, {Gpu("g1")}),
                   2,
                   {"start cpu-pool {}"}});
  cases.push_back({"cpu tasks keep a gpu group only when no cpu group serves them",
                   CapabilityInput({{{}, 2, 0}}, {Gpu("g1")}),
                   1,
                   {}});
  for (CapabilityCase& c : cases) {
    SCOPED_TRACE(c.name);
    CapabilityPolicy policy = MakePolicy();
    Decision d = policy.Evaluate(c.input);
    EXPECT_EQ(d.desired_replicas, c.expected_groups) << d.reason;
    EXPECT_EQ(Describe(d.actions), c.expected_actions) << d.reason;
  }
}

TEST(CapabilityPolicyTest, ReasonsExplainGuards) {
  CapabilityPolicy policy = MakePolicy();
  Decision last = policy.Evaluate(CapabilityInput({{{"gpu"}, 1, 0}}, {Gpu("g1", 4)}));
  EXPECT_THAT(last.reason, HasSubstr("kept group 'g1'"));
  EXPECT_THAT(last.reason, HasSubstr("last group able to serve 1 pending {gpu} task"));
  Decision thrash =
      policy.Evaluate(CapabilityInput({{{"gpu"}, 8, 0}}, {Gpu("small"), Gpu("large", 20)}));
  EXPECT_THAT(thrash.reason, HasSubstr("an immediate scale-up"));
  Decision start = policy.Evaluate(CapabilityInput({{{}, 1, 0}, {{"gpu"}, 50, 0}}, {Cpu("c1")}));
  EXPECT_THAT(start.reason, HasSubstr("scale out 1 -> 2: start a {gpu} group on adapter "
                                      "'gpu-pool' (50 tasks need {gpu} and no group can serve "
                                      "them)"));
}

TEST(CapabilityPolicyTest, StartAndShutdownInOneTickIsARebalance) {
  CapabilityPolicy policy = MakePolicy();
  Decision d = policy.Evaluate(CapabilityInput({{{"gpu"}, 50, 0}}, {Cpu("c1")}));
  EXPECT_EQ(d.desired_replicas, 1);
  EXPECT_EQ(Describe(d.actions), (std::vector<std::string>{"start gpu-pool {gpu}", "shutdown c1"}));
  EXPECT_THAT(d.reason, HasSubstr("rebalance at 1: start a {gpu} group"));
}

TEST(CapabilityPolicyTest, NeverShutsDownOnMissingData) {
  CapabilityPolicy policy = MakePolicy();
  ScalingInput input = CapabilityInput({}, {Cpu("c1"), Gpu("g1")});
  input.metrics_error = true;
  Decision d = policy.Evaluate(input);
  EXPECT_EQ(d.desired_replicas, 2);
  EXPECT_TRUE(d.actions.empty());
  EXPECT_EQ(
      policy.Evaluate(CapabilityInput({{{"gpu"}, -1, 0}}, {Cpu("c1"), Gpu("g1")})).desired_replicas,
      2);
}

TEST(CapabilityPolicyTest, RespectsAdapterAndReplicaLimits) {
  CapabilityPolicy policy = MakePolicy(0, 2);
  Decision at_max = policy.Evaluate(CapabilityInput({{{"gpu"}, 50, 0}}, {Gpu("g1"), Gpu("g2")}));
  EXPECT_EQ(at_max.desired_replicas, 2);
  EXPECT_THAT(at_max.reason, HasSubstr("max_replicas 2 is reached"));
  CapabilityPolicy wide = MakePolicy(0, 10);
  AdapterCapacity one_gpu{"gpu-pool", 1, 1, {"gpu"}};
  Decision full = wide.Evaluate(CapabilityInput({{{"gpu"}, 50, 0}}, {Gpu("g1")}, {one_gpu}));
  EXPECT_EQ(full.desired_replicas, 1);
  EXPECT_THAT(full.reason, HasSubstr("no adapter with room provides {gpu}"));
  Decision none = wide.Evaluate(CapabilityInput({{{"tpu"}, 5, 0}}, {}, {kCpuAdapter, kGpuAdapter}));
  EXPECT_EQ(none.desired_replicas, 0);
  EXPECT_THAT(none.reason, HasSubstr("no adapter with room provides {tpu}"));
}

TEST(CapabilityPolicyTest, ImplicitAdapterProvidesAnySet) {
  CapabilityPolicy policy = MakePolicy();
  Decision d = policy.Evaluate(CapabilityInput({{{"gpu"}, 3, 0}}, {}, {}));
  EXPECT_EQ(d.desired_replicas, 1);
  EXPECT_EQ(Describe(d.actions), std::vector<std::string>{"start default {gpu}"});
}

TEST(CapabilityPolicyTest, FillsToMinAndTrimsToMax) {
  CapabilityPolicy min_one = MakePolicy(1, 4);
  Decision filled = min_one.Evaluate(CapabilityInput({}, {}));
  EXPECT_EQ(filled.desired_replicas, 1);
  EXPECT_EQ(Describe(filled.actions), std::vector<std::string>{"start cpu-pool {}"});
  Decision kept = min_one.Evaluate(CapabilityInput({}, {Cpu("c1")}));
  EXPECT_EQ(kept.desired_replicas, 1);
  EXPECT_THAT(kept.reason, HasSubstr("min_replicas is 1"));
  CapabilityPolicy max_one = MakePolicy(0, 1);
  Decision trimmed = max_one.Evaluate(CapabilityInput({{{}, 1, 0}}, {Cpu("c1", 4), Cpu("c2", 4)}));
  EXPECT_EQ(trimmed.desired_replicas, 1);
  EXPECT_EQ(Describe(trimmed.actions), std::vector<std::string>{"shutdown c2"});
}

TEST(CapabilityPolicyTest, MinAboveMaxClampsDefensively) {
  CapabilityPolicy policy(CapabilityPolicyConfig{2, 1, 5, 0.5});
  EXPECT_EQ(policy.Evaluate(CapabilityInput({}, {})).desired_replicas, 2);
}

}  // namespace
}  // namespace gpuscale::scale
