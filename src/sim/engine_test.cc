#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "scale/metric_names.h"
#include "scale/policy.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "testing/fake_orchestrator.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::sim {
namespace {

using testing::AffineReplicaModel;
using testing::RecordingPolicy;
using testing::ScriptedPolicy;

Trace Uniform(int n, double gap, int in, int out) {
  Trace t;
  for (int i = 0; i < n; ++i) t.requests.push_back({i * gap, in, out});
  return t;
}

std::unique_ptr<ScriptedPolicy> Fixed(int replicas, int max = 16) {
  auto p = std::make_unique<ScriptedPolicy>(0, max);
  p->desired = replicas;
  return p;
}

SimulationConfig SmallConfig() {
  SimulationConfig c;
  c.cluster = {1, 8, "H100", 81559};
  c.service.min_replicas = 1;
  c.service.max_replicas = 8;
  c.service.cold_start = Seconds{30};
  return c;
}

const scale::ScalingInput& TickAt(const std::vector<scale::ScalingInput>& seen, double t) {
  for (const auto& input : seen) {
    if (input.now.count() == t) return input;
  }
  ADD_FAILURE() << "no tick at " << t;
  return seen.front();
}

// The daemon scrapes every replica at its tick (TickCollector) and the policy reads that:
// a tick at t sees the requests running at t, and a replica whose cold start ended at t,
// not the previous scrape interval's sample.
TEST(EngineTest, TickReadsTheReplicasAsTheyAreAtTheTick) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  config.control_interval = Seconds{5};
  config.scrape_interval = Seconds{5};
  config.service.cold_start = Seconds{15};
  std::vector<scale::ScalingInput> seen;
  // 20 long generations from t = 1: all running at t = 5 (about 15 s of decode each).
  Trace trace = Uniform(20, 0.0, 100, 2000);
  for (auto& r : trace.requests) r.arrival_s = 1;
  auto result = RunSimulation(config, model, std::make_unique<RecordingPolicy>(2, &seen), trace);
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_GE(seen.size(), 4u);
  const auto running = [](const scale::ScalingInput& input) {
    return input.metrics.at(std::string(scale::metric_names::kRunning)).per_replica;
  };
  EXPECT_EQ(running(TickAt(seen, 5)), std::vector<double>{20});
  // The replica placed at t = 0 is ready at 15: that tick reads both.
  EXPECT_EQ(TickAt(seen, 15).ready_replicas, 2);
  EXPECT_EQ(running(TickAt(seen, 15)).size(), 2u);
}

// The daemon's loop ticks at its probe interval (1 s) while a replica starts
// (Daemon::LoopInterval), and its policy runs on those ticks: the replica placed at t = 0
// starts until t = 15, so ticks fall every second until then, every 5 s after.
TEST(EngineTest, TicksEverySecondWhileAReplicaStarts) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  config.control_interval = Seconds{5};
  config.service.cold_start = Seconds{15};
  std::vector<scale::ScalingInput> seen;
  auto result = RunSimulation(config, model, std::make_unique<RecordingPolicy>(2, &seen),
                              Uniform(30, 1, 100, 10));
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_GE(seen.size(), 18u);
  for (int i = 0; i <= 15; ++i) EXPECT_EQ(seen[i].now.count(), i);
  EXPECT_EQ(seen[16].now.count(), 20);
  EXPECT_EQ(seen[17].now.count(), 25);
}

TEST(EngineTest, LoneRequestLatencyFollowsModel) {
  AffineReplicaModel model;
  auto result = RunSimulation(SmallConfig(), model, Fixed(1), Uniform(1, 1, 1000, 11));
  ASSERT_TRUE(result) << result.error().ToString();
  const auto& r = result->report;
  EXPECT_EQ(r.completed, 1);
  EXPECT_NEAR(r.ttft_s.p50, model.PrefillSeconds(1000), 1e-9);
  // Ten decode steps of a batch of one, context 1001..1010 tokens.
  double steps = 10 * model.DecodeStepSeconds(1, 1001 + 4);
  EXPECT_NEAR(r.e2e_s.p50, model.PrefillSeconds(1000) + steps, 1e-9);
  EXPECT_EQ(r.attainment, 1.0);
}

TEST(EngineTest, BatchingSharesDecodeSteps) {
  AffineReplicaModel model;
  // 50 requests at once: one replica batches them; e2e far below 50 serial generations.
  auto result = RunSimulation(SmallConfig(), model, Fixed(1), Uniform(50, 0.0, 200, 100));
  ASSERT_TRUE(result);
  double serial = 50 * 100 * model.DecodeStepSeconds(1, 300);
  EXPECT_EQ(result->report.completed, 50);
  EXPECT_LT(result->report.e2e_s.p99, serial / 10);
}

TEST(EngineTest, KvCacheFullMakesRequestsWait) {
  testing::AffineCosts costs;
  costs.kv_cache_tokens = 2000;  // room for one 1000+500 request at a time
  AffineReplicaModel model(costs);
  auto result = RunSimulation(SmallConfig(), model, Fixed(1), Uniform(3, 0.0, 1000, 500));
  ASSERT_TRUE(result);
  // Served one after the other: the last one's TTFT covers two full generations.
  double one = model.PrefillSeconds(1000) + 499 * model.DecodeStepSeconds(1, 1250);
  EXPECT_GT(result->report.ttft_s.p99, 1.9 * one);
}

TEST(EngineTest, ColdStartDelaysScaleOutAndGpuHoursCountIt) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  auto result = RunSimulation(config, model, Fixed(3), Uniform(600, 0.1, 200, 50));
  ASSERT_TRUE(result);
  ASSERT_FALSE(result->timeline.empty());
  EXPECT_EQ(result->timeline[0].starting, 2);
  EXPECT_EQ(result->report.replicas_started, 2);
  EXPECT_EQ(result->report.peak_replicas, 3);
  // One replica from t=0, two from the first tick; all held until the end.
  double end = result->report.duration_s;
  EXPECT_NEAR(result->report.gpu_hours, 3 * end / 3600.0, 1e-9);
}

TEST(EngineTest, PendingWhenClusterIsFull) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  config.cluster = {1, 2, "H100", 81559};
  auto result = RunSimulation(config, model, Fixed(4), Uniform(100, 0.5, 200, 50));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->timeline[0].pending, 2);
  EXPECT_EQ(result->report.peak_replicas, 2);
}

TEST(EngineTest, ScaleInDrainsThenStops) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  config.service.initial_replicas = 3;
  auto result = RunSimulation(config, model, Fixed(1), Uniform(400, 0.05, 200, 200));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->report.aborted, 0);  // drained, not killed
  EXPECT_EQ(result->report.replicas_stopped, 2);
  EXPECT_EQ(result->report.completed, 400);
}

TEST(EngineTest, RecoversFromCrashAndMetricsOutage) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  config.faults.crash_at_seconds = {100};
  config.faults.metrics_outages = {{150, 200}};
  auto result = RunSimulation(config, model, Fixed(2), Uniform(3000, 0.1, 200, 50));
  ASSERT_TRUE(result);
  const auto& r = result->report;
  EXPECT_GT(r.aborted, 0);  // the crash lost its in-flight requests
  EXPECT_EQ(r.replicas_started, 2);  // the initial scale-out, then the replacement
  EXPECT_EQ(result->timeline.back().ready, 2);
  EXPECT_EQ(r.completed + r.aborted, r.requests);
}

// Least-outstanding routing sends a replica whose cold start just ended every arrival until
// it holds as many requests as its peers: four replicas' worth of prompts at once, whose
// prefill queue misses the TTFT target. Slow start spreads that over its window.
TEST(EngineTest, SlowStartKeepsAFreshReplicaFromBeingFlooded) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  config.service.initial_replicas = 4;
  config.service.cold_start = Seconds{30};
  config.slo.ttft_seconds = 1;
  // 40 req/s of 1000-token prompts and 600-token answers: more than four replicas serve
  // within the TTFT target, so the fifth is needed from t = 30.
  const Trace trace = Uniform(2400, 0.025, 1000, 600);
  auto plain = RunSimulation(config, model, Fixed(5), trace);
  config.router.slow_start_seconds = 20;
  auto slow = RunSimulation(config, model, Fixed(5), trace);
  ASSERT_TRUE(plain && slow);
  ASSERT_EQ(plain->report.replicas_started, 1);  // the fifth, ready at t = 30
  // Plain: the fifth replica's first ~60 prompts queue for seconds (88.5 % attainment).
  EXPECT_GT(plain->report.ttft_s.p99, 2.0);
  EXPECT_LT(plain->report.attainment, 0.95);
  // Slow start: every request within the 1 s TTFT target.
  EXPECT_LT(slow->report.ttft_s.p99, config.slo.ttft_seconds);
  EXPECT_GT(slow->report.attainment, 0.999);
  // The report says where the plain router's misses fell: on the fresh replica, all of them
  // (the four warm ones served within the SLO).
  const int64_t misses = plain->report.requests - plain->report.slo_met;
  EXPECT_GT(misses, 100);
  EXPECT_EQ(plain->report.fresh_replica_misses, misses);
}

TEST(EngineTest, SameInputsGiveIdenticalResults) {
  AffineReplicaModel model;
  auto trace = Uniform(5000, 0.013, 300, 120);
  for (size_t i = 0; i < trace.requests.size(); i += 7) trace.requests[i].output_tokens = 700;
  auto a = RunSimulation(SmallConfig(), model, Fixed(2), trace);
  auto b = RunSimulation(SmallConfig(), model, Fixed(2), trace);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(FormatReportTable(a->report, {1.0, {}}), FormatReportTable(b->report, {1.0, {}}));
  EXPECT_EQ(FormatTimelineCsv(a->timeline), FormatTimelineCsv(b->timeline));
}

TEST(EngineTest, RejectsBadConfig) {
  AffineReplicaModel model;
  auto config = SmallConfig();
  config.service.gpus_per_replica = 16;
  auto result = RunSimulation(config, model, Fixed(1), Uniform(1, 1, 1, 1));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().field, "service.gpus_per_replica");
  config = SmallConfig();
  config.cluster.nodes = 1'000'000;  // 8 million GPUs: refused before any is allocated
  result = RunSimulation(config, model, Fixed(1), Uniform(1, 1, 1, 1));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().field, "cluster.nodes");
}

TEST(EngineTest, RejectsATraceSpanningMoreTicksThanOneRunSimulates) {
  AffineReplicaModel model;
  const auto config = SmallConfig();
  Trace trace = Uniform(1, 1, 1, 1);
  // One stray timestamp decades out: an error naming the trace, not a run that never ends.
  trace.requests.push_back({1e9, 100, 10});
  auto result = RunSimulation(config, model, Fixed(1), trace);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().field, "trace");
  EXPECT_NE(result.error().message.find("spans 1000000000 s"), std::string::npos)
      << result.error().message;
}

}  // namespace
}  // namespace gpuscale::sim
