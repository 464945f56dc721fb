#include "scale/target_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace gpuscale::scale {
namespace {

MetricValue Service(double v) {
  MetricValue m;
  m.source = MetricSource::kPrometheus;
  m.service_value = v;
  return m;
}

MetricValue PerReplica(std::vector<double> values) {
  MetricValue m;
  m.per_replica = std::move(values);
  return m;
}

TargetMetric Metric(std::string name, MetricTargetType type, double target,
                    Aggregation aggregation = Aggregation::kAverage) {
  TargetMetric m;
  m.name = std::move(name);
  m.type = type;
  m.target = target;
  m.aggregation = aggregation;
  return m;
}

// Behavior that never holds anything back, to test the replica calculator alone.
Behavior Unrestricted() {
  Behavior b;
  b.scale_up = {0, SelectPolicy::kMax, {{ScalingPolicyType::kPercent, 10000, 15}}};
  b.scale_down = {0, SelectPolicy::kMax, {{ScalingPolicyType::kPercent, 100, 15}}};
  return b;
}

TargetPolicyConfig Config(std::vector<TargetMetric> metrics, int min_replicas = 1,
                          int max_replicas = 100) {
  TargetPolicyConfig c;
  c.min_replicas = min_replicas;
  c.max_replicas = max_replicas;
  c.metrics = std::move(metrics);
  return c;
}

ScalingInput TargetInput(double now, int current, std::map<std::string, MetricValue> metrics) {
  ScalingInput in;
  in.now = Seconds{now};
  in.current_replicas = current;
  in.ready_replicas = current;
  in.metrics = std::move(metrics);
  return in;
}

struct CalculatorCase {
  const char* name;
  TargetMetric metric;
  int current;
  MetricValue value;
  int want;
};

// HPA's documented algorithm: desiredReplicas = ceil(currentReplicas * current / desired),
// nothing happens within the 0.1 tolerance; AverageValue divides the total by the target.
TEST(TargetPolicyTest, ReplicaCalculatorTable) {
  using T = MetricTargetType;
  using A = Aggregation;
  const std::vector<CalculatorCase> cases = {
      {"HPA doc: 200m vs 100m doubles", Metric("m", T::kValue, 0.1), 3, Service(0.2), 6},
      {"HPA doc: 50m vs 100m halves", Metric("m", T::kValue, 0.1), 4, Service(0.05), 2},
      {"within tolerance is a no-op", Metric("m", T::kValue, 0.1), 3, Service(0.109), 3},
      {"just outside tolerance scales", Metric("m", T::kValue, 100), 10, Service(111), 12},
      {"tolerance band below", Metric("m", T::kValue, 100), 10, Service(91), 10},
      {"AverageValue total / target", Metric("m", T::kAverageValue, 100), 2, Service(500), 5},
      {"AverageValue total within tolerance", Metric("m", T::kAverageValue, 100), 5, Service(520),
       5},
      {"AverageValue per replica", Metric("m", T::kAverageValue, 100), 3,
       PerReplica({150, 150, 150}), 5},
      {"Utilization per replica", Metric("m", T::kUtilization, 60), 2, PerReplica({90, 90}), 3},
      {"Utilization service average", Metric("m", T::kUtilization, 50), 4, Service(75), 6},
      {"Value aggregates per replica by average", Metric("m", T::kValue, 20), 2,
       PerReplica({10, 50}), 3},
      {"Value aggregates by max", Metric("m", T::kValue, 20, A::kMax), 2, PerReplica({10, 50}), 5},
      {"Value aggregates by min", Metric("m", T::kValue, 20, A::kMin), 2, PerReplica({10, 50}), 1},
      {"AverageValue aggregates by sum", Metric("m", T::kAverageValue, 20, A::kSum), 2,
       PerReplica({30, 50}), 4},
      {"missing replicas damp a scale-down", Metric("m", T::kAverageValue, 100), 4,
       PerReplica({50, 50}), 3},
      {"missing replicas count as idle on scale-up", Metric("m", T::kAverageValue, 100), 4,
       PerReplica({300, 300}), 6},
      {"missing replicas flip direction -> hold", Metric("m", T::kAverageValue, 100), 4,
       PerReplica({150, 150}), 4},
      {"NaN replica value is ignored", Metric("m", T::kAverageValue, 100), 2,
       PerReplica({std::nan(""), 300}), 3},
      {"exact ratios do not round up", Metric("m", T::kAverageValue, 0.2), 1, Service(0.6), 3},
  };
  for (const CalculatorCase& c : cases) {
    TargetPolicyConfig config = Config({c.metric});
    config.behavior = Unrestricted();
    TargetPolicy policy(config);
    const Decision d = policy.Evaluate(TargetInput(0, c.current, {{"m", c.value}}));
    EXPECT_EQ(d.desired_replicas, c.want) << c.name << ": " << d.reason;
  }
}

TEST(TargetPolicyTest, ReasonNamesMetricValueAndTarget) {
  TargetPolicy policy(Config({Metric("vllm:num_requests_waiting", MetricTargetType::kValue, 0.1)}));
  const Decision d =
      policy.Evaluate(TargetInput(0, 3, {{"vllm:num_requests_waiting", Service(0.2)}}));
  EXPECT_EQ(d.desired_replicas, 6);
  EXPECT_NE(d.reason.find("scale 3 -> 6"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("vllm:num_requests_waiting = 0.2"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("value 0.1"), std::string::npos) << d.reason;
}

TEST(TargetPolicyTest, DefaultBehaviorLimitsScaleUpPerPeriod) {
  TargetPolicy policy(Config({Metric("m", MetricTargetType::kAverageValue, 1)}));
  const std::vector<std::pair<double, int>> steps = {{0, 1}, {15, 5}, {30, 10}, {45, 20}};
  int current = 1;
  for (const auto& [now, expect_current] : steps) {
    ASSERT_EQ(current, expect_current) << "t=" << now;
    current = policy.Evaluate(TargetInput(now, current, {{"m", Service(1000)}})).desired_replicas;
  }
  EXPECT_EQ(current, 40);
}

TEST(TargetPolicyTest, HoldsScaleDownInsideWindow) {
  TargetPolicy policy(Config({Metric("m", MetricTargetType::kAverageValue, 10)}));
  int current = 8;
  for (double now = 0; now < 300; now += 15) {
    const Decision d = policy.Evaluate(TargetInput(now, current, {{"m", Service(20)}}));
    ASSERT_EQ(d.desired_replicas, 8) << "t=" << now << ": " << d.reason;
    if (now > 0) {
      EXPECT_NE(d.reason.find("stabilization window (300 s)"), std::string::npos) << d.reason;
    }
  }
  EXPECT_EQ(policy.Evaluate(TargetInput(300, current, {{"m", Service(20)}})).desired_replicas, 2);
}

TEST(TargetPolicyTest, LargestProposalWins) {
  TargetPolicyConfig config = Config(
      {Metric("a", MetricTargetType::kAverageValue, 10), Metric("b", MetricTargetType::kValue, 1)});
  config.behavior = Unrestricted();
  TargetPolicy policy(config);
  const Decision d = policy.Evaluate(TargetInput(0, 2, {{"a", Service(30)}, {"b", Service(4)}}));
  EXPECT_EQ(d.desired_replicas, 8);  // a: 3, b: 2 * 4 = 8
  EXPECT_NE(d.reason.find("b = 4"), std::string::npos) << d.reason;
  EXPECT_EQ(d.details.size(), 2u);
}

struct MissingCase {
  const char* name;
  std::map<std::string, MetricValue> metrics;
  bool metrics_error;
  int want;
};

// HPA: invalid metrics veto a scale-down but not a scale-up.
TEST(TargetPolicyTest, MissingMetricsNeverScaleDown) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<MissingCase> cases = {
      {"one metric absent, other says down", {{"a", Service(10)}}, false, 5},
      {"one metric absent, other says up", {{"a", Service(80)}}, false, 8},
      {"all metrics absent", {}, false, 5},
      {"NaN service value", {{"a", Service(nan)}, {"b", Service(0)}}, false, 5},
      {"negative service value", {{"a", Service(-3)}, {"b", Service(0)}}, false, 5},
      {"no ready replica reported", {{"a", PerReplica({})}, {"b", PerReplica({})}}, false, 5},
      {"metrics_error flag", {{"a", Service(10)}, {"b", Service(0)}}, true, 5},
      {"all fine scales down", {{"a", Service(10)}, {"b", Service(0)}}, false, 1},
  };
  for (const MissingCase& c : cases) {
    TargetPolicyConfig config = Config({Metric("a", MetricTargetType::kAverageValue, 10),
                                        Metric("b", MetricTargetType::kAverageValue, 10)});
    config.behavior = Unrestricted();
    TargetPolicy policy(config);
    ScalingInput in = TargetInput(0, 5, c.metrics);
    in.metrics_error = c.metrics_error;
    EXPECT_EQ(policy.Evaluate(in).desired_replicas, c.want) << c.name;
  }
}

TEST(TargetPolicyTest, NoReadyReplicasHoldsCount) {
  TargetPolicy policy(Config({Metric("m", MetricTargetType::kAverageValue, 10)}));
  ScalingInput in = TargetInput(0, 3, {{"m", PerReplica({})}});
  in.ready_replicas = 0;
  const Decision d = policy.Evaluate(in);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_NE(d.reason.find("no usable metric"), std::string::npos) << d.reason;
}

TargetPolicyConfig KedaConfig() {
  TargetMetric m = Metric("queue", MetricTargetType::kAverageValue, 10);
  m.activation_threshold = 2;
  m.query = "sum(vllm:num_requests_waiting)";
  TargetPolicyConfig c = Config({m}, 0, 10);
  c.polling_interval_seconds = 30;
  c.cooldown_period_seconds = 300;
  return c;
}

struct ActivationCase {
  const char* name;
  double value;
  int want;
};

TEST(TargetPolicyTest, ActivatesFromZeroAboveActivationThreshold) {
  const std::vector<ActivationCase> cases = {
      {"zero stays at zero", 0, 0},
      {"at the threshold stays at zero", 2, 0},
      {"above the threshold activates one replica", 2.5, 1},
      {"a large value still activates only one", 500, 1},
  };
  for (const ActivationCase& c : cases) {
    TargetPolicy policy(KedaConfig());
    const Decision d = policy.Evaluate(TargetInput(0, 0, {{"queue", Service(c.value)}}));
    EXPECT_EQ(d.desired_replicas, c.want) << c.name << ": " << d.reason;
  }
}

TEST(TargetPolicyTest, ActivationWaitsForPollingInterval) {
  TargetPolicy policy(KedaConfig());
  EXPECT_EQ(policy.Evaluate(TargetInput(0, 0, {{"queue", Service(0)}})).desired_replicas, 0);
  const Decision early = policy.Evaluate(TargetInput(10, 0, {{"queue", Service(50)}}));
  EXPECT_EQ(early.desired_replicas, 0);
  EXPECT_NE(early.reason.find("next activation check in 20 s"), std::string::npos) << early.reason;
  EXPECT_EQ(policy.Evaluate(TargetInput(30, 0, {{"queue", Service(50)}})).desired_replicas, 1);
}

TEST(TargetPolicyTest, ScalesToZeroAfterCooldown) {
  TargetPolicyConfig config = KedaConfig();
  config.behavior = Unrestricted();
  TargetPolicy policy(config);
  int current = policy.Evaluate(TargetInput(0, 3, {{"queue", Service(30)}})).desired_replicas;
  EXPECT_EQ(current, 3);
  for (double now = 30; now < 300; now += 30) {
    const Decision d = policy.Evaluate(TargetInput(now, current, {{"queue", Service(1)}}));
    ASSERT_EQ(d.desired_replicas, 1) << "t=" << now << ": " << d.reason;  // HPA floor is 1
    current = d.desired_replicas;
  }
  const Decision d = policy.Evaluate(TargetInput(300, current, {{"queue", Service(1)}}));
  EXPECT_EQ(d.desired_replicas, 0) << d.reason;
  EXPECT_NE(d.reason.find("cooldown_period_seconds 300"), std::string::npos) << d.reason;
}

TEST(TargetPolicyTest, FailingMetricBlocksScaleToZero) {
  TargetPolicy policy(KedaConfig());
  policy.Evaluate(TargetInput(0, 1, {{"queue", Service(5)}}));
  EXPECT_EQ(policy.Evaluate(TargetInput(600, 1, {})).desired_replicas, 1);
  ScalingInput err = TargetInput(630, 1, {{"queue", Service(0)}});
  err.metrics_error = true;
  EXPECT_EQ(policy.Evaluate(err).desired_replicas, 1);
  EXPECT_EQ(policy.Evaluate(TargetInput(660, 1, {{"queue", Service(0)}})).desired_replicas, 0);
}

TEST(TargetPolicyTest, FallbackAfterFailureThreshold) {
  TargetPolicyConfig config = KedaConfig();
  config.min_replicas = 1;
  config.fallback = KedaFallback{.failure_threshold = 2, .replicas = 6};
  TargetPolicy policy(config);
  // failures 1 and 2 hold; the third (> 2) proposes the fallback count.
  EXPECT_EQ(policy.Evaluate(TargetInput(0, 2, {})).desired_replicas, 2);
  EXPECT_EQ(policy.Evaluate(TargetInput(15, 2, {})).desired_replicas, 2);
  const Decision d = policy.Evaluate(TargetInput(30, 2, {}));
  EXPECT_EQ(d.desired_replicas, 6) << d.reason;
  EXPECT_NE(d.reason.find("fallback replicas 6"), std::string::npos) << d.reason;
  // A good read resets the counter: one new failure holds again.
  EXPECT_EQ(policy.Evaluate(TargetInput(45, 6, {{"queue", Service(60)}})).desired_replicas, 6);
  EXPECT_EQ(policy.Evaluate(TargetInput(60, 6, {})).desired_replicas, 6);
}

// A fallback count below the current one lowers it only on a tick without metrics_error; the
// daemon sets metrics_error on a failed query, so there the count holds and says why
// (`policy eval` of examples/policies/keda_input.json: "hold at 5 ... fallback replicas 2").
TEST(TargetPolicyTest, FallbackLowersOnlyOnTicksWithoutMetricsError) {
  TargetPolicyConfig config = KedaConfig();
  config.min_replicas = 1;
  config.behavior = Unrestricted();
  config.fallback = KedaFallback{.failure_threshold = 0, .replicas = 2};
  TargetPolicy held(config);
  ScalingInput failed = TargetInput(0, 5, {});
  failed.metrics_error = true;
  const Decision d = held.Evaluate(failed);
  EXPECT_EQ(d.desired_replicas, 5) << d.reason;
  EXPECT_NE(d.reason.find("fallback replicas 2"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("metrics could not be read this tick, so no scale-down: while reads "
                          "fail, fallback replicas 2 only raise the count"),
            std::string::npos)
      << d.reason;
  EXPECT_EQ(d.reason.find("a metric is missing"), std::string::npos) << d.reason;

  TargetPolicy lowered(config);
  const Decision absent = lowered.Evaluate(TargetInput(0, 5, {}));
  EXPECT_EQ(absent.desired_replicas, 2) << absent.reason;
}

TEST(TargetPolicyTest, FallbackScalesFromZero) {
  TargetPolicyConfig config = KedaConfig();
  config.fallback = KedaFallback{.failure_threshold = 0, .replicas = 2};
  TargetPolicy policy(config);
  EXPECT_EQ(policy.Evaluate(TargetInput(0, 0, {})).desired_replicas, 2);
}

TEST(TargetPolicyTest, BoundsComeBeforeMetrics) {
  TargetPolicy policy(Config({Metric("m", MetricTargetType::kAverageValue, 10)}, 2, 5));
  EXPECT_EQ(policy.Evaluate(TargetInput(0, 9, {{"m", Service(100)}})).desired_replicas, 5);
  EXPECT_EQ(policy.Evaluate(TargetInput(15, 0, {})).desired_replicas, 2);  // start from zero
  EXPECT_EQ(policy.Evaluate(TargetInput(30, 1, {{"m", Service(0)}})).desired_replicas, 2);
}

TEST(TargetPolicyTest, MinAboveMaxIsClampedDefensively) {
  TargetPolicyConfig config = Config({Metric("m", MetricTargetType::kAverageValue, 10)}, 6, 3);
  TargetPolicy policy(config);
  for (int current : {0, 2, 3, 8}) {
    const int d = policy.Evaluate(TargetInput(current * 15.0, current, {{"m", Service(1000)}}))
                      .desired_replicas;
    EXPECT_LE(d, 3) << "current " << current;
    EXPECT_GE(d, 0) << "current " << current;
  }
}

}  // namespace
}  // namespace gpuscale::scale
