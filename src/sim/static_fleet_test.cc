#include "sim/static_fleet.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
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

// Loads of the frontier tests, req/s: a burst several replicas serve, a flat load for a few.
constexpr double kFrontierBurstRate = 60;
constexpr double kFrontierFlatRate = 40;

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

// ---- the static frontier

// A policy that follows a schedule: `replicas[i]` from `from_s[i]` on (a hindsight
// autoscaler; the frontier judges what a run cost and attained, not how it decided).
class FrontierSchedulePolicy final : public scale::Policy {
 public:
  FrontierSchedulePolicy(std::vector<double> from_s, std::vector<int> replicas, int max)
      : from_s_(std::move(from_s)), replicas_(std::move(replicas)), max_(max) {}
  std::string_view Family() const override { return "schedule"; }
  int MinReplicas() const override { return 1; }
  int MaxReplicas() const override { return max_; }
  scale::Decision Evaluate(const scale::ScalingInput& input) override {
    int desired = replicas_.front();
    for (size_t i = 0; i < from_s_.size(); ++i) {
      if (input.now.count() >= from_s_[i]) desired = replicas_[i];
    }
    return {desired, "schedule", {}, {}, {}};
  }

 private:
  std::vector<double> from_s_;
  std::vector<int> replicas_;
  int max_;
};

// Poisson arrivals at `rate` req/s over [start_s, end_s), 200-1700 prompt and 20-320 output
// tokens, appended to `trace` (a fixed-seed generator per call).
void AppendFrontierLoad(Trace& trace, double start_s, double end_s, double rate, uint64_t seed) {
  uint64_t state = seed;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  };
  for (double t = start_s - std::log(1 - next()) / rate; t < end_s;
       t += -std::log(1 - next()) / rate) {
    trace.requests.push_back(
        {t, 200 + static_cast<int32_t>(next() * 1500), 20 + static_cast<int32_t>(next() * 300)});
  }
}

// Runs the schedule on `trace` from `initial` warm replicas: what it cost and attained.
RunCost RunSchedule(SimulationConfig config, const ReplicaModel& model, const Trace& trace,
                    int initial, std::vector<double> from_s, std::vector<int> replicas,
                    double* end_s) {
  config.service.initial_replicas = initial;
  auto run = RunSimulation(config, model,
                           std::make_unique<FrontierSchedulePolicy>(
                               std::move(from_s), std::move(replicas), config.service.max_replicas),
                           trace);
  EXPECT_TRUE(run) << run.error().ToString();
  if (!run) return {};
  *end_s = run->report.duration_s;
  return {run->report.attainment, run->report.gpu_hours};
}

TEST(StaticFrontierTest, AutoscalingWinsOnAShortBurstThenALongIdle) {
  AffineReplicaModel model;
  const auto config = TwoGpuConfig();
  // A minute of heavy load, then an hour of a request every 10 s.
  Trace trace;
  AppendFrontierLoad(trace, 0, 60, kFrontierBurstRate, 7);
  AppendFrontierLoad(trace, 60, 3660, 0.1, 8);
  auto burst_fleet = SmallestStaticFleet(config, model, trace, 3660);
  ASSERT_TRUE(burst_fleet);
  ASSERT_TRUE(burst_fleet->meets_target);
  const int k = burst_fleet->replicas;
  ASSERT_GE(k, 3);  // the burst needs several replicas; the idle hour one
  // The autoscaler: the burst's fleet warm, then one replica once the burst has drained.
  double end_s = 0;
  const RunCost run = RunSchedule(config, model, trace, k, {0, 120}, {k, 1}, &end_s);
  ASSERT_GE(run.attainment, config.slo.target_ratio);

  auto frontier = ComputeStaticFrontier(config, model, trace, end_s, std::span(&run, 1));
  ASSERT_TRUE(frontier) << frontier.error().ToString();
  EXPECT_EQ(frontier->smallest.replicas, k);
  // The fleets it could afford were replayed, and each attains less than it does.
  int affordable = 0;
  for (const FleetPoint& p : frontier->points) {
    if (p.gpu_hours > run.gpu_hours) continue;
    ++affordable;
    EXPECT_LT(p.attainment, run.attainment) << p.replicas << " replicas";
  }
  ASSERT_GE(affordable, 1);
  const FrontierVerdict verdict = JudgeAgainstFrontier(*frontier, run);
  EXPECT_FALSE(verdict.dominated_by) << verdict.dominated_by->replicas << " replicas";
  ASSERT_TRUE(verdict.cost_vs_static);
  EXPECT_DOUBLE_EQ(*verdict.cost_vs_static, run.gpu_hours / frontier->smallest.gpu_hours);
  EXPECT_LT(*verdict.cost_vs_static, 0.5);  // a fraction of the burst's fleet held for an hour
}

TEST(StaticFrontierTest, OnAFlatLoadTheRightStaticFleetDominatesAnOvershootingAutoscaler) {
  AffineReplicaModel model;
  const auto config = TwoGpuConfig();
  Trace trace;
  AppendFrontierLoad(trace, 0, 600, kFrontierFlatRate, 9);
  auto right = SmallestStaticFleet(config, model, trace, 600);
  ASSERT_TRUE(right);
  ASSERT_TRUE(right->meets_target);
  const int n = right->replicas;
  ASSERT_LE(2 * n, config.FleetCeiling());
  // The autoscaler overshoots to twice the fleet the load needs for four minutes.
  double end_s = 0;
  const RunCost run = RunSchedule(config, model, trace, n, {0, 120, 360}, {n, 2 * n, n}, &end_s);
  auto frontier = ComputeStaticFrontier(config, model, trace, end_s, std::span(&run, 1));
  ASSERT_TRUE(frontier) << frontier.error().ToString();
  const FrontierVerdict verdict = JudgeAgainstFrontier(*frontier, run);
  ASSERT_TRUE(verdict.dominated_by);
  const FleetPoint& beats = *verdict.dominated_by;
  EXPECT_GE(beats.attainment, run.attainment);
  EXPECT_LT(beats.gpu_hours, run.gpu_hours);
  // The cheapest that does: one replica fewer attains less than the run.
  EXPECT_GE(Attainment(config, model, trace, beats.replicas), run.attainment);
  EXPECT_LT(Attainment(config, model, trace, beats.replicas - 1), run.attainment);
  ASSERT_TRUE(verdict.cost_vs_static);
  EXPECT_GT(*verdict.cost_vs_static, 1.2);
}

StaticFrontier HandFrontier() {
  // 2 GPU-hours per replica; the smallest meeting 0.99 is 3.
  StaticFrontier f;
  f.points = {{1, 0.50, 2, false}, {2, 0.95, 4, false}, {3, 0.995, 6, true}, {4, 1.0, 8, true}};
  f.smallest = {3, 0.995, 6, true};
  return f;
}

TEST(StaticFrontierTest, DominatedByIsTheCheapestFleetAtMostAsCostlyAndAtLeastAsGood) {
  struct Case {
    const char* what;
    RunCost run;
    int want;  // 0: not dominated
  };
  for (const Case& c : {
           Case{"equal cost, equal attainment: a tie, not beaten", {0.95, 4}, 0},
           Case{"equal cost, better attainment: beaten", {0.94, 4}, 2},
           Case{"cheaper, equal attainment: beaten", {0.95, 4.5}, 2},
           Case{"cheaper and better: beaten", {0.90, 5.0}, 2},
           Case{"the cheapest of several that beat it", {0.60, 7.9}, 2},
           Case{"cheaper but worse: not beaten", {0.96, 4.5}, 0},
           Case{"better but dearer: not beaten", {0.995, 5.9}, 0},
           Case{"equal cost within rounding counts as equal", {0.95, 4 * (1 + 1e-12)}, 0},
           Case{"beyond rounding it is cheaper", {0.95, 4 * (1 + 1e-6)}, 2},
           Case{"as good as any fleet, dearer than the first that matches it", {1.0, 100}, 4},
           Case{"as good as any fleet it could afford", {1.0, 7.9}, 0},
           Case{"cheaper than every fleet", {0.10, 1.5}, 0},
       }) {
    const FrontierVerdict v = JudgeAgainstFrontier(HandFrontier(), c.run);
    EXPECT_EQ(v.dominated_by ? v.dominated_by->replicas : 0, c.want) << c.what;
  }
}

TEST(StaticFrontierTest, CostVsStaticIsOverTheSmallestFleetMeetingTheTargetWhereOneDoes) {
  StaticFrontier f = HandFrontier();
  const FrontierVerdict v = JudgeAgainstFrontier(f, {0.999, 4.5});
  ASSERT_TRUE(v.cost_vs_static);
  EXPECT_DOUBLE_EQ(*v.cost_vs_static, 0.75);
  f.smallest = {4, 0.98, 8, false};  // out of reach: no ratio
  EXPECT_FALSE(JudgeAgainstFrontier(f, {0.999, 4.5}).cost_vs_static);
}

TEST(StaticFrontierTest, ReplaysEachSizeOnceForEveryRunAndHoldsTheStepAtTheTarget) {
  AffineReplicaModel model;
  const auto config = TwoGpuConfig();
  const auto trace = BurstyTrace(300);
  auto smallest = SmallestStaticFleet(config, model, trace, 300);
  ASSERT_TRUE(smallest);
  const int n = smallest->replicas;
  ASSERT_GE(n, 2);
  ASSERT_LE(n + 2, config.FleetCeiling());
  // Two runs that need other sizes to be judged: a cheap poor one and a dear perfect one.
  const std::vector<RunCost> runs = {{0.2, 1.5 * 300 / 3600 * 2}, {1.0, 40}};
  std::vector<int> tried;
  auto frontier = ComputeStaticFrontier(config, model, trace, 300, runs,
                                        [&](int size, double) { tried.push_back(size); });
  ASSERT_TRUE(frontier) << frontier.error().ToString();
  EXPECT_EQ(frontier->smallest.replicas, n);
  EXPECT_DOUBLE_EQ(frontier->smallest.attainment, smallest->attainment);
  ASSERT_EQ(frontier->points.size(), tried.size());  // each size once
  std::vector<int> sizes;
  for (const FleetPoint& p : frontier->points) {
    sizes.push_back(p.replicas);
    EXPECT_DOUBLE_EQ(p.attainment, Attainment(config, model, trace, p.replicas));
    EXPECT_DOUBLE_EQ(p.gpu_hours, p.replicas * 2 * 300 / 3600.0);
    EXPECT_EQ(p.meets_target, p.attainment >= config.slo.target_ratio);
  }
  ASSERT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
  for (int size : {n - 1, n, n + 1, n + 2}) {
    EXPECT_NE(std::find(sizes.begin(), sizes.end(), size), sizes.end()) << size;
  }
  // The one replica the cheap run could afford was replayed to judge it.
  EXPECT_EQ(sizes.front(), 1);
}

TEST(StaticFrontierTest, RejectsAnEmptyTraceAndANonPositiveDuration) {
  AffineReplicaModel model;
  EXPECT_FALSE(ComputeStaticFrontier(TwoGpuConfig(), model, Trace{}, 60, {}));
  EXPECT_FALSE(ComputeStaticFrontier(TwoGpuConfig(), model, BurstyTrace(60), 0, {}));
}

}  // namespace
}  // namespace gpuscale::sim
