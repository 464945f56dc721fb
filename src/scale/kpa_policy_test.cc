#include "scale/kpa_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace gpuscale::scale {
namespace {

constexpr char kConcurrency[] = "concurrency";

// target 10 concurrent requests per replica (utilization 100 %), one concurrency metric.
KpaPolicyConfig Config(int min_replicas = 0, int max_replicas = 100) {
  KpaPolicyConfig c;
  c.min_replicas = min_replicas;
  c.max_replicas = max_replicas;
  c.target_concurrency = 10;
  c.target_utilization_percentage = 100;
  c.concurrency_metrics = {kConcurrency};
  return c;
}

ScalingInput KpaInput(double now, int replicas, double concurrency) {
  ScalingInput in;
  in.now = Seconds{now};
  in.current_replicas = replicas;
  in.ready_replicas = replicas;
  MetricValue m;
  m.service_value = concurrency;
  in.metrics[kConcurrency] = m;
  return in;
}

// Feeds `concurrency` every 2 s over [from, to) and applies each decision, like the daemon.
int Drive(KpaPolicy& policy, double from, double to, int replicas, double concurrency) {
  for (double t = from; t < to; t += 2) {
    replicas = policy.Evaluate(KpaInput(t, replicas, concurrency)).desired_replicas;
  }
  return replicas;
}

TEST(KpaPolicyTest, KnativeDefaults) {
  const KpaPolicyConfig c;
  EXPECT_EQ(c.stable_window_seconds, 60);
  EXPECT_EQ(c.panic_window_percentage, 10);
  EXPECT_EQ(c.panic_threshold_percentage, 200);
  EXPECT_EQ(c.max_scale_up_rate, 1000);
  EXPECT_EQ(c.max_scale_down_rate, 2);
  EXPECT_EQ(c.scale_to_zero_grace_period_seconds, 30);
  EXPECT_EQ(c.target_utilization_percentage, 70);
}

TEST(KpaPolicyTest, StableModeTracksTargetConcurrency) {
  KpaPolicy policy(Config());
  const Decision d = policy.Evaluate(KpaInput(0, 3, 35));
  EXPECT_EQ(d.desired_replicas, 4);  // ceil(35 / 10); 4 / 3 < 200 %: no panic
  EXPECT_FALSE(policy.panicking());
  EXPECT_NE(d.reason.find("scale 3 -> 4"), std::string::npos) << d.reason;
}

TEST(KpaPolicyTest, UtilizationLowersTheTarget) {
  KpaPolicyConfig c = Config();
  c.target_utilization_percentage = 70;  // 7 per replica
  KpaPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(KpaInput(0, 5, 35)).desired_replicas, 5);
}

TEST(KpaPolicyTest, StableWindowAveragesLoad) {
  KpaPolicy policy(Config());
  int replicas = Drive(policy, 0, 60, 4, 40);  // steady at 4
  EXPECT_EQ(replicas, 4);
  // A drop to 0 only lowers the 60 s average gradually: at t=60 it is 29 * 40 / 30.
  EXPECT_EQ(policy.Evaluate(KpaInput(60, 4, 0)).desired_replicas, 4);
  EXPECT_FALSE(policy.panicking());
}

// Panic: enter when the panic-window demand reaches 200 % of ready replicas, hold (never
// scale down) while panicking, exit a full stable window after the last crossing.
TEST(KpaPolicyTest, PanicEnterHoldExit) {
  KpaPolicy policy(Config());
  int replicas = Drive(policy, 0, 60, 2, 20);
  ASSERT_EQ(replicas, 2);
  ASSERT_FALSE(policy.panicking());
  // Enter: at t=60 the panic window (54, 60] averages (20 + 20 + 80) / 3 = 40, i.e. 4
  // replicas' worth: 200 % of the 2 ready ones. The stable window only asks for 3.
  Decision d = policy.Evaluate(KpaInput(60, 2, 80));
  EXPECT_TRUE(policy.panicking());
  EXPECT_EQ(d.desired_replicas, 4);
  EXPECT_NE(d.reason.find("panic mode"), std::string::npos) << d.reason;
  // The burst goes on; in panic the policy follows the panic window (6, then 8).
  replicas = Drive(policy, 62, 66, 4, 80);
  EXPECT_EQ(replicas, 8);
  // Hold: load falls back; while panicking the count does not go down.
  for (double t = 66; t <= 120; t += 2) {
    d = policy.Evaluate(KpaInput(t, replicas, 10));
    ASSERT_TRUE(policy.panicking()) << "t=" << t;
    ASSERT_EQ(d.desired_replicas, 8) << "t=" << t << ": " << d.reason;
  }
  // Exit: the last crossing was at t=60; after 60 + 60 s the policy is stable again and
  // scales down, by at most half per tick (max_scale_down_rate 2).
  d = policy.Evaluate(KpaInput(122, replicas, 10));
  EXPECT_FALSE(policy.panicking());
  EXPECT_EQ(d.desired_replicas, 4) << d.reason;
}

TEST(KpaPolicyTest, ScaleDownRateLimitsDrop) {
  KpaPolicyConfig c = Config();
  c.stable_window_seconds = 6;
  KpaPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(KpaInput(0, 8, 0)).desired_replicas, 4);  // floor(8 / 2)
}

TEST(KpaPolicyTest, ScaleUpRateLimitsGrowth) {
  KpaPolicyConfig c = Config();
  c.max_scale_up_rate = 2;
  KpaPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(KpaInput(0, 2, 1000)).desired_replicas, 4);  // ceil(2 * 2)
}

TEST(KpaPolicyTest, ScaleToZeroWaitsForGracePeriod) {
  KpaPolicyConfig c = Config();
  c.stable_window_seconds = 6;
  KpaPolicy policy(c);
  Decision d = policy.Evaluate(KpaInput(0, 1, 0));
  EXPECT_EQ(d.desired_replicas, 1);
  EXPECT_NE(d.reason.find("keeping 1 replica for 30 s more"), std::string::npos) << d.reason;
  EXPECT_EQ(policy.Evaluate(KpaInput(20, 1, 0)).desired_replicas, 1);
  EXPECT_EQ(policy.Evaluate(KpaInput(30, 1, 0)).desired_replicas, 0);
  EXPECT_EQ(policy.Evaluate(KpaInput(40, 0, 0)).desired_replicas, 0);
}

TEST(KpaPolicyTest, MinReplicasPreventsScaleToZero) {
  KpaPolicyConfig c = Config(1, 10);
  c.stable_window_seconds = 6;
  KpaPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(KpaInput(0, 1, 0)).desired_replicas, 1);
  EXPECT_EQ(policy.Evaluate(KpaInput(100, 1, 0)).desired_replicas, 1);
}

TEST(KpaPolicyTest, ScalesFromZeroOnDemand) {
  KpaPolicy policy(Config());
  EXPECT_EQ(policy.Evaluate(KpaInput(0, 0, 0)).desired_replicas, 0);
  EXPECT_EQ(policy.Evaluate(KpaInput(2, 0, 5)).desired_replicas, 1);
}

TEST(KpaPolicyTest, MissingOrInvalidConcurrencyHolds) {
  KpaPolicy policy(Config());
  ScalingInput absent = KpaInput(0, 3, 0);
  absent.metrics.clear();
  Decision d = policy.Evaluate(absent);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_NE(d.reason.find("concurrency was not reported"), std::string::npos) << d.reason;
  EXPECT_EQ(policy.Evaluate(KpaInput(2, 3, std::nan(""))).desired_replicas, 3);
  EXPECT_EQ(policy.Evaluate(KpaInput(4, 3, -5)).desired_replicas, 3);
  ScalingInput empty = KpaInput(6, 3, 0);
  empty.metrics[kConcurrency] = MetricValue{};  // replicas exist, none reported
  EXPECT_EQ(policy.Evaluate(empty).desired_replicas, 3);
}

TEST(KpaPolicyTest, SumsPerReplicaValuesOfEveryMetric) {
  KpaPolicyConfig c = Config();
  c.concurrency_metrics = {"running", "waiting"};
  KpaPolicy policy(c);
  ScalingInput in;
  in.now = Seconds{0};
  in.current_replicas = 3;
  in.ready_replicas = 3;
  in.metrics["running"].per_replica = {10, 10, 10};
  in.metrics["waiting"].per_replica = {5, 5, 5};
  EXPECT_EQ(policy.Evaluate(in).desired_replicas, 5);  // ceil(45 / 10)
}

TEST(KpaPolicyTest, BoundsClampTheRecommendation) {
  KpaPolicy policy(Config(2, 5));
  EXPECT_EQ(policy.Evaluate(KpaInput(0, 3, 500)).desired_replicas, 5);
  KpaPolicyConfig inverted = Config(6, 3);
  KpaPolicy clamped(inverted);
  EXPECT_EQ(clamped.Evaluate(KpaInput(0, 1, 0)).desired_replicas, 3);
}

}  // namespace
}  // namespace gpuscale::scale
