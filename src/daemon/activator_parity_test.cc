// One decision path: a `min_replicas: 0` service, held at zero by its policy, makes the same
// first decision when a request arrives whether the daemon runs it (ServiceRuntime over a fake
// orchestrator, the request in the gateway's activator queue) or the simulator does (the
// request in its router queue). Both wrap the policy in scale::OverridablePolicy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "daemon/service_runtime.h"
#include "sim/simulation.h"
#include "testing/fake_orchestrator.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::daemon {
namespace {

using ::testing::StartsWith;

constexpr Seconds kControlInterval{15};
constexpr double kArrivalSeconds = 1;

// A policy that always chooses 0 replicas of [0, 4].
std::unique_ptr<testing::ScriptedPolicy> HoldsAtZero() {
  auto policy = std::make_unique<testing::ScriptedPolicy>(0, 4);
  policy->desired = 0;
  return policy;
}

struct FirstDecision {
  Seconds at{0};
  int desired = 0;
  std::string reason;
};

// Live: control ticks every kControlInterval; the request waits in the gateway's activator
// queue from kArrivalSeconds on (no replica is ready to take it).
std::optional<FirstDecision> LiveFirstScaleUp() {
  testing::FakeOrchestrator orchestrator(/*slots=*/4, Seconds{30});
  ServiceConfig config;
  config.name = "chat";
  config.command = {"serve"};
  config.min_replicas = 0;
  config.max_replicas = 4;
  ServiceRuntime runtime(config, HoldsAtZero(), orchestrator);
  for (Seconds now{0}; now <= Seconds{60}; now += kControlInterval) {
    ServiceObservation observation;
    observation.gateway_waiting = now.count() >= kArrivalSeconds ? 1 : 0;
    const ServiceTickResult& r = runtime.Tick(now, observation, nullptr, {});
    if (r.tick.desired_replicas > 0) {
      return FirstDecision{now, r.tick.desired_replicas, r.tick.decision.reason};
    }
  }
  return std::nullopt;
}

// Simulated: the same service, policy and control interval; a trace of one request.
std::optional<FirstDecision> SimulatedFirstScaleUp(sim::SimReport* report) {
  sim::SimulationConfig config;
  config.cluster = {1, 4, "H100", 81559};
  config.service.min_replicas = 0;
  config.service.max_replicas = 4;
  config.service.initial_replicas = 0;
  config.service.cold_start = Seconds{30};
  config.control_interval = kControlInterval;
  sim::Trace trace;
  trace.requests.push_back({kArrivalSeconds, 100, 10});
  testing::AffineReplicaModel model;
  auto result = sim::RunSimulation(config, model, HoldsAtZero(), trace);
  if (!result) {
    ADD_FAILURE() << result.error().ToString();
    return std::nullopt;
  }
  *report = result->report;
  for (const sim::TimelineRow& row : result->timeline) {
    if (row.desired > 0) return FirstDecision{Seconds{row.time_s}, row.desired, row.reason};
  }
  return std::nullopt;
}

TEST(ActivatorParityTest, SimulatedAndLiveServiceAtZeroWakeAlikeForOneRequest) {
  const std::optional<FirstDecision> live = LiveFirstScaleUp();
  sim::SimReport report;
  const std::optional<FirstDecision> simulated = SimulatedFirstScaleUp(&report);
  ASSERT_TRUE(live.has_value()) << "the live service never left zero";
  ASSERT_TRUE(simulated.has_value()) << "the simulated service never left zero";
  EXPECT_EQ(live->desired, 1);
  EXPECT_THAT(live->reason, StartsWith("activator: 1 request wait at the gateway"));
  EXPECT_EQ(simulated->desired, live->desired);
  EXPECT_EQ(simulated->reason, live->reason);
  EXPECT_EQ(simulated->at, live->at);  // the first tick after the arrival, in both
  EXPECT_EQ(report.completed, 1);      // the woken replica served the request
}

}  // namespace
}  // namespace gpuscale::daemon
