#include "sim/static_fleet.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "sim/oracle.h"
#include "testing/bursty_trace.h"
#include "testing/fake_orchestrator.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::sim {
namespace {

using testing::BurstyTrace;
using testing::AffineReplicaModel;

// Two GPUs per replica, so that GPU-hours are not replica-hours.
SimulationConfig TwoGpuConfig() {
  SimulationConfig c;
  c.service.gpus_per_replica = 2;
  c.service.max_replicas = 16;
  c.cluster = {2, 8, "H100", 81559};
  return c;
}

double Attainment(const SimulationConfig& config, const ReplicaModel& model, const Trace& trace,
                  int replicas) {
  return FleetAttainment(model, trace.requests, replicas, config.router.kind, config.slo);
}

TEST(StaticFleetTest, IsTheSmallestFleetMeetingTheTargetAndCostsItsGpusForTheRun) {
  AffineReplicaModel model;
  const auto trace = BurstyTrace(600);
  const auto config = TwoGpuConfig();
  std::vector<int> tried;
  auto fleet = SmallestStaticFleet(config, model, trace, 1800,
                                   [&](int n, double) { tried.push_back(n); });
  ASSERT_TRUE(fleet) << fleet.error().ToString();
  ASSERT_TRUE(fleet->meets_target);
  ASSERT_GT(fleet->replicas, 1);  // the trace needs more than one replica at its bursts
  EXPECT_GE(fleet->attainment, config.slo.target_ratio);
  EXPECT_DOUBLE_EQ(fleet->attainment, Attainment(config, model, trace, fleet->replicas));
  EXPECT_LT(Attainment(config, model, trace, fleet->replicas - 1), config.slo.target_ratio);
  // n replicas x 2 GPUs for half an hour.
  EXPECT_DOUBLE_EQ(fleet->gpu_hours, fleet->replicas * 2 * 0.5);
  // Bisection over [1, 16]: at most ceil(log2(16)) + 1 replays.
  EXPECT_LE(tried.size(), 5u);
}

TEST(StaticFleetTest, AgreesWithAFixedFleetRunThroughTheEngine) {
  // The same n warm replicas, router and model as a run whose policy never scales.
  AffineReplicaModel model;
  const auto trace = BurstyTrace(300);
  auto config = TwoGpuConfig();
  auto fleet = SmallestStaticFleet(config, model, trace, 300);
  ASSERT_TRUE(fleet);
  config.service.initial_replicas = fleet->replicas;
  auto policy = std::make_unique<testing::ScriptedPolicy>(fleet->replicas, fleet->replicas);
  policy->desired = fleet->replicas;
  auto run = RunSimulation(config, model, std::move(policy), trace);
  ASSERT_TRUE(run) << run.error().ToString();
  EXPECT_NEAR(run->report.attainment, fleet->attainment, 1e-9);
}

TEST(StaticFleetTest, SaysWhenNoFleetWithinMaxReplicasMeetsTheTarget) {
  AffineReplicaModel model;
  const auto trace = BurstyTrace(300);
  auto config = TwoGpuConfig();
  config.service.max_replicas = 1;
  auto fleet = SmallestStaticFleet(config, model, trace, 300);
  ASSERT_TRUE(fleet);
  EXPECT_FALSE(fleet->meets_target);
  EXPECT_EQ(fleet->replicas, 1);
  EXPECT_DOUBLE_EQ(fleet->attainment, Attainment(config, model, trace, 1));
  EXPECT_LT(fleet->attainment, config.slo.target_ratio);
}

TEST(StaticFleetTest, NeverSizesAFleetTheClusterCannotHold) {
  AffineReplicaModel model;
  const auto trace = BurstyTrace(300);
  auto config = TwoGpuConfig();
  config.service.max_replicas = 1000;  // a ceiling far above what 3 GPUs place
  config.cluster = {1, 3, "H100", 81559};
  ASSERT_EQ(config.FleetCeiling(), 1);  // one whole 2-GPU replica per 3-GPU node
  auto fleet = SmallestStaticFleet(config, model, trace, 300);
  ASSERT_TRUE(fleet);
  EXPECT_FALSE(fleet->meets_target);
  EXPECT_EQ(fleet->replicas, 1);
}

TEST(FleetCeilingTest, IsMaxReplicasOrWhatTheNodesPlace) {
  struct Case {
    int nodes, gpus_per_node, gpus_per_replica, max_replicas, want;
  };
  for (const Case& c : {Case{4, 8, 1, 32, 32}, Case{4, 8, 1, 100, 32}, Case{4, 8, 3, 100, 8},
                        Case{2, 8, 8, 100, 2}, Case{8, 8, 1, 10, 10}}) {
    SimulationConfig config;
    config.cluster = {c.nodes, c.gpus_per_node, "H100", 81559};
    config.service.gpus_per_replica = c.gpus_per_replica;
    config.service.max_replicas = c.max_replicas;
    EXPECT_EQ(config.FleetCeiling(), c.want)
        << c.nodes << " x " << c.gpus_per_node << " GPUs, " << c.gpus_per_replica
        << " per replica, max " << c.max_replicas;
  }
}

TEST(StaticFleetTest, NeverGoesBelowMinReplicas) {
  AffineReplicaModel model;
  Trace tiny;
  tiny.requests = {{0, 10, 10}};
  auto config = TwoGpuConfig();
  config.service.min_replicas = 3;
  auto fleet = SmallestStaticFleet(config, model, tiny, 3600);
  ASSERT_TRUE(fleet);
  EXPECT_EQ(fleet->replicas, 3);
  EXPECT_TRUE(fleet->meets_target);
  EXPECT_DOUBLE_EQ(fleet->gpu_hours, 6.0);
}

TEST(StaticFleetTest, RejectsAnEmptyTraceAndANonPositiveDuration) {
  AffineReplicaModel model;
  auto empty = SmallestStaticFleet(TwoGpuConfig(), model, Trace{}, 60);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().field, "trace");
  auto zero = SmallestStaticFleet(TwoGpuConfig(), model, BurstyTrace(60), 0);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().field, "end_s");
}

TEST(WarmStartReplicasTest, IsTheStaticFleetForTheTracesFirstMinutesOnly) {
  AffineReplicaModel model;
  const auto config = TwoGpuConfig();
  // The first five minutes of a bursty trace, then a flood that must not count.
  Trace trace = BurstyTrace(kWarmStartSeconds);
  Trace head = trace;
  for (double t = kWarmStartSeconds; t < kWarmStartSeconds + 60; t += 0.001) {
    trace.requests.push_back({t, 2000, 300});
  }
  auto fleet = SmallestStaticFleet(config, model, head, kWarmStartSeconds);
  ASSERT_TRUE(fleet);
  EXPECT_EQ(WarmStartReplicas(config, model, trace), fleet->replicas);
  EXPECT_GT(WarmStartReplicas(config, model, trace), 1);
}

TEST(WarmStartReplicasTest, IsMinReplicasWhenTheFirstMinutesAreSilent) {
  AffineReplicaModel model;
  auto config = TwoGpuConfig();
  config.service.min_replicas = 2;
  Trace late;
  late.requests = {{kWarmStartSeconds + 1, 100, 10}};
  EXPECT_EQ(WarmStartReplicas(config, model, late), 2);
}

TEST(WarmStartReplicasTest, OutOfReachIsTheSmallestFleetNearTheBestAttainment) {
  AffineReplicaModel model;
  auto config = TwoGpuConfig();
  config.slo.target_ratio = 1;
  // A first prompt no replica prefills within the TTFT target: 1 is out of reach at any size,
  // and the whole cluster would be a start nobody needs.
  Trace trace = BurstyTrace(kWarmStartSeconds);
  trace.requests.insert(trace.requests.begin(), TraceRequest{0, 100000, 10});
  const int ceiling = config.FleetCeiling();
  const double best = Attainment(config, model, trace, ceiling);
  ASSERT_LT(best, 1);
  const int n = WarmStartReplicas(config, model, trace);
  EXPECT_LT(n, ceiling);
  EXPECT_GE(Attainment(config, model, trace, n), best - 0.005);
  EXPECT_LT(Attainment(config, model, trace, n - 1), best - 0.005);
}

TEST(WarmStartReplicasTest, AnUnsizedAutoStartIsRefusedByTheEngine) {
  AffineReplicaModel model;
  auto config = TwoGpuConfig();
  config.service.initial_replicas = ServiceSpec::kAutoInitialReplicas;
  auto run = RunSimulation(config, model, std::make_unique<testing::ScriptedPolicy>(1, 1),
                           BurstyTrace(60));
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().field, "service.initial_replicas");
}

}  // namespace
}  // namespace gpuscale::sim
