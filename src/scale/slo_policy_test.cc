#include "scale/slo_policy.h"

#include <gtest/gtest.h>

#include "scale/metric_names.h"

namespace gpuscale::scale {
namespace {

namespace names = metric_names;

struct Load {
  double rate = 0;       // completions/s (and arrivals, in steady state)
  double waiting = 0;    // per replica
  double running = 5;    // per replica
  double violation = 0;  // TTFT/TPOT violation ratio
};

ScalingInput Input(double now, int replicas, const Load& load, int ready = -1) {
  ScalingInput in;
  in.now = Seconds{now};
  in.current_replicas = replicas;
  in.ready_replicas = ready < 0 ? replicas : ready;
  MetricValue waiting, running;
  waiting.per_replica.assign(in.ready_replicas, load.waiting);
  running.per_replica.assign(in.ready_replicas, load.running);
  in.metrics[std::string(names::kWaiting)] = waiting;
  in.metrics[std::string(names::kRunning)] = running;
  auto service = [&](std::string_view name, double v) {
    MetricValue m;
    m.service_value = v;
    in.metrics[std::string(name)] = m;
  };
  service(names::kSuccessRate30s, load.rate);
  service(names::kSuccessRate2m, load.rate);
  service(names::kTtftViolationRatio, load.violation);
  service(names::kTpotViolationRatio, 0);
  return in;
}

SloPolicyConfig Config() {
  SloPolicyConfig c;
  c.min_replicas = 1;
  c.max_replicas = 50;
  c.initial_capacity_rps = 10;
  c.target_utilization = 1.0;
  c.burst_z = 0;
  c.learn_capacity = false;
  return c;
}

TEST(SloPolicyTest, ProvisionsForArrivalRateOverCapacity) {
  SloPolicy policy(Config());
  // 95 req/s at 10 req/s per replica -> 10 replicas.
  EXPECT_EQ(policy.Evaluate(Input(0, 4, {95})).desired_replicas, 10);
}

TEST(SloPolicyTest, HoldsWithoutDataAndOnMetricErrors) {
  SloPolicy policy(Config());
  ScalingInput empty;
  empty.current_replicas = 3;
  EXPECT_EQ(policy.Evaluate(empty).desired_replicas, 3);
  auto failed = Input(15, 3, {1});
  failed.metrics_error = true;
  auto d = policy.Evaluate(failed);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_NE(d.reason.find("metrics unavailable"), std::string::npos) << d.reason;
}

TEST(SloPolicyTest, CountsQueueGrowthAsArrivals) {
  SloPolicy policy(Config());
  policy.Evaluate(Input(0, 5, {50, 0, 5}));
  // In-system grows by 5 replicas * 10 = 50 requests in 10 s: arrivals 50 + 0.5 * 5 = 52.5
  // (smoothed), plus the backlog 50 / 30 s.
  auto d = policy.Evaluate(Input(10, 5, {50, 10, 5}));
  EXPECT_EQ(d.desired_replicas, 6);
}

TEST(SloPolicyTest, ExtrapolatesRisingTrendOverHorizon) {
  auto c = Config();
  c.forecast_horizon = Seconds{90};
  SloPolicy policy(c);
  auto in = Input(0, 5, {50});
  in.metrics[std::string(names::kSuccessRate2m)].service_value = 41;  // rising 9 req/s per 45 s
  // 50 + 0.2 * 90 = 68 -> 7 replicas.
  EXPECT_EQ(policy.Evaluate(in).desired_replicas, 7);
}

TEST(SloPolicyTest, ScalesDownOnlyAfterDelayAndByOneStep) {
  auto c = Config();
  c.scale_down_delay = Seconds{60};
  SloPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(Input(0, 10, {100})).desired_replicas, 10);
  EXPECT_EQ(policy.Evaluate(Input(15, 10, {30})).desired_replicas, 10);  // within the delay
  EXPECT_EQ(policy.Evaluate(Input(45, 10, {30})).desired_replicas, 10);
  EXPECT_EQ(policy.Evaluate(Input(75, 10, {30})).desired_replicas, 9);  // one step
  EXPECT_EQ(policy.Evaluate(Input(90, 9, {30})).desired_replicas, 8);
}

TEST(SloPolicyTest, ViolationWithQueueAddsAReplica) {
  SloPolicy policy(Config());
  // Load says 3 replicas, but the SLO is violated and requests queue.
  EXPECT_EQ(policy.Evaluate(Input(0, 3, {25, 2, 5, 0.2})).desired_replicas, 4);
}

TEST(SloPolicyTest, LearnsLowerCapacityFromViolationsAtLoad) {
  auto c = Config();
  c.learn_capacity = true;
  SloPolicy policy(c);
  policy.Evaluate(Input(0, 4, {36, 0, 5, 0.2}));  // 9 req/s per replica violates
  EXPECT_NEAR(policy.capacity_rps(), 9.0, 1e-9);
  policy.Evaluate(Input(15, 4, {36, 0, 5, 0.2}));  // inside the cut cooldown: no second cut
  EXPECT_NEAR(policy.capacity_rps(), 9.0, 1e-9);
}

TEST(SloPolicyTest, LearnsHigherCapacityWhenSloHoldsAboveEstimate) {
  auto c = Config();
  c.learn_capacity = true;
  SloPolicy policy(c);
  policy.Evaluate(Input(0, 4, {48}));  // 12 req/s per replica, no violations
  EXPECT_NEAR(policy.capacity_rps(), 12.0, 1e-9);
}

TEST(SloPolicyTest, StaysWithinBounds) {
  auto c = Config();
  c.max_replicas = 6;
  SloPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(Input(0, 4, {500})).desired_replicas, 6);
  SloPolicy idle(Config());
  EXPECT_EQ(idle.Evaluate(Input(0, 1, {0, 0, 0})).desired_replicas, 1);
}

}  // namespace
}  // namespace gpuscale::scale
