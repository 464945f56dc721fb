#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/policy_config.h"
#include "scale/kpa_policy.h"
#include "scale/target_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

// Parses `text` (a whole policy file) and runs the family parser on its block, the way the
// dispatcher does.
Result<std::unique_ptr<scale::Policy>> ParseFamily(const std::string& text,
                                                   const std::string& family,
                                                   CommonPolicyFields common = {1, 8}) {
  auto root = yaml::ParseYaml(text, "test.yaml");
  if (!root) return Unexpected<Error>(root.error());
  const YAML::Node block = (*root)[family];
  return family == "kpa" ? ParseKpaPolicy(block, family, common)
                         : ParseTargetPolicy(block, family, common);
}

const scale::TargetPolicyConfig& TargetConfig(const scale::Policy& policy) {
  return dynamic_cast<const scale::TargetPolicy&>(policy).config();
}

TEST(TargetPolicyParserTest, ParsesHpaMetricsAndBehavior) {
  auto policy = ParseFamily(R"(family: target
target:
  tolerance: 0.05
  metrics:
    - {name: queue, type: Value, value: 3, aggregation: max}
    - {name: kv, type: Utilization, average_utilization: 80}
    - {name: waiting, average_value: 5}
  behavior:
    scale_up:
      select_policy: Min
      policies: [{type: Pods, value: 2, period_seconds: 30}]
    scale_down:
      stabilization_window_seconds: 60
)",
                            "target");
  ASSERT_TRUE(policy) << policy.error().ToString();
  const scale::TargetPolicyConfig& c = TargetConfig(**policy);
  EXPECT_EQ(c.tolerance, 0.05);
  ASSERT_EQ(c.metrics.size(), 3u);
  EXPECT_EQ(c.metrics[0].type, scale::MetricTargetType::kValue);
  EXPECT_EQ(c.metrics[0].target, 3);
  EXPECT_EQ(c.metrics[0].aggregation, scale::Aggregation::kMax);
  EXPECT_EQ(c.metrics[1].type, scale::MetricTargetType::kUtilization);
  EXPECT_EQ(c.metrics[1].target, 80);
  EXPECT_EQ(c.metrics[2].type, scale::MetricTargetType::kAverageValue);  // the default type
  EXPECT_EQ(c.behavior.scale_up.select_policy, scale::SelectPolicy::kMin);
  ASSERT_EQ(c.behavior.scale_up.policies.size(), 1u);
  EXPECT_EQ(c.behavior.scale_up.policies[0].period_seconds, 30);
  EXPECT_EQ(c.behavior.scale_up.stabilization_window_seconds, 0);  // HPA default kept
  EXPECT_EQ(c.behavior.scale_down.stabilization_window_seconds, 60);
  EXPECT_EQ(c.behavior.scale_down.policies.size(), 1u);  // HPA default kept
  EXPECT_FALSE(c.fallback);
}

TEST(TargetPolicyParserTest, ParsesKedaTriggerWithDefaults) {
  auto policy = ParseFamily(R"(target:
  fallback: {replicas: 2}
  triggers:
    - type: prometheus
      query: sum(vllm:num_requests_waiting)
      threshold: 10
)",
                            "target", {0, 6});
  ASSERT_TRUE(policy) << policy.error().ToString();
  const scale::TargetPolicyConfig& c = TargetConfig(**policy);
  ASSERT_EQ(c.metrics.size(), 1u);
  EXPECT_EQ(c.metrics[0].name, "sum(vllm:num_requests_waiting)");  // name defaults to query
  EXPECT_EQ(c.metrics[0].query, "sum(vllm:num_requests_waiting)");
  EXPECT_EQ(c.metrics[0].type, scale::MetricTargetType::kAverageValue);
  EXPECT_EQ(c.metrics[0].activation_threshold, 0);
  EXPECT_EQ(c.polling_interval_seconds, 30);  // KEDA default
  EXPECT_EQ(c.cooldown_period_seconds, 300);  // KEDA default
  ASSERT_TRUE(c.fallback);
  EXPECT_EQ(c.fallback->failure_threshold, 3);  // KEDA default
  EXPECT_EQ(c.fallback->replicas, 2);
  EXPECT_EQ((*policy)->MinReplicas(), 0);
  EXPECT_EQ((*policy)->MaxReplicas(), 6);
}

struct TargetErrorCase {
  const char* name;
  const char* family;
  const char* yaml;
  const char* want;  // the exact "field: message (line N)" text, or a prefix of it
};

TEST(TargetPolicyParserTest, ErrorsNameFieldAndLine) {
  const std::vector<TargetErrorCase> cases = {
      {"unknown metric type", "target",
       "target:\n  metrics:\n    - name: q\n      type: average\n      average_value: 1\n",
       "target.metrics[0].type: expected one of Value, AverageValue, Utilization, got "
       "'average' (line 4)"},
      {"target key does not match type", "target",
       "target:\n  metrics:\n    - name: q\n      type: AverageValue\n      value: 1\n",
       "target.metrics[0].value: does not go with type AverageValue; use average_value (line 5)"},
      {"missing target value", "target", "target:\n  metrics:\n    - name: q\n      type: Value\n",
       "target.metrics[0].value: required field is missing (line 3)"},
      {"non-positive target", "target",
       "target:\n  metrics:\n    - name: q\n      average_value: 0\n",
       "target.metrics[0].average_value: must be > 0, got 0 (line 4)"},
      {"misspelled key", "target", "target:\n  metrics:\n    - name: q\n      averge_value: 3\n",
       "target.metrics[0].averge_value: unknown field; accepted fields: name, type, value, "
       "average_value, average_utilization, aggregation, activation_threshold, query (line 4)"},
      {"bad aggregation", "target",
       "target:\n  metrics:\n    - {name: q, average_value: 1, aggregation: median}\n",
       "target.metrics[0].aggregation: expected one of average, max, min, sum, got 'median' (line "
       "3)"},
      {"no metrics at all", "target", "target:\n  tolerance: 0.1\n",
       "target.metrics: a target policy needs at least one entry in metrics or triggers "
       "(line 2)"},
      {"tolerance out of range", "target",
       "target:\n  tolerance: 2\n  metrics: [{name: q, average_value: 1}]\n",
       "target.tolerance: must be between 0 and 1, got 2 (line 2)"},
      {"rate policy type", "target",
       "target:\n  metrics: [{name: q, average_value: 1}]\n  behavior:\n    scale_up:\n"
       "      policies:\n        - {type: pods, value: 1, period_seconds: 15}\n",
       "target.behavior.scale_up.policies[0].type: expected one of Pods, Percent, got 'pods' "
       "(line 6)"},
      {"period out of range", "target",
       "target:\n  metrics: [{name: q, average_value: 1}]\n  behavior:\n    scale_down:\n"
       "      policies:\n        - {type: Pods, value: 1, period_seconds: 0}\n",
       "target.behavior.scale_down.policies[0].period_seconds: must be between 1 and 1800, "
       "got 0 (line 6)"},
      {"window too long", "target",
       "target:\n  metrics: [{name: q, average_value: 1}]\n  behavior:\n    scale_down:\n"
       "      stabilization_window_seconds: 4000\n",
       "target.behavior.scale_down.stabilization_window_seconds: must be between 0 and 3600, "
       "got 4000 (line 5)"},
      {"select policy spelling", "target",
       "target:\n  metrics: [{name: q, average_value: 1}]\n  behavior:\n    scale_up:\n"
       "      select_policy: max\n",
       "target.behavior.scale_up.select_policy: expected one of Max, Min, Disabled, got 'max' "
       "(line 5)"},
      {"empty policies need Disabled", "target",
       "target:\n  metrics: [{name: q, average_value: 1}]\n  behavior:\n    scale_up:\n"
       "      policies: []\n",
       "target.behavior.scale_up.policies: needs at least one policy unless select_policy is "
       "Disabled (line 5)"},
      {"unsupported trigger type", "target",
       "target:\n  triggers:\n    - type: kafka\n      query: q\n      threshold: 1\n",
       "target.triggers[0].type: expected one of prometheus, got 'kafka' (line 3)"},
      {"trigger without query", "target",
       "target:\n  triggers:\n    - type: prometheus\n      threshold: 1\n",
       "target.triggers[0].query: required field is missing (line 3)"},
      {"fallback with a Value metric", "target",
       "target:\n  metrics: [{name: q, type: Value, value: 1}]\n  fallback:\n"
       "    replicas: 2\n",
       "target.fallback: needs AverageValue metrics (as in KEDA); metric 'q' is value (line 4)"},
      {"fallback replicas missing", "target",
       "target:\n  metrics: [{name: q, average_value: 1}]\n  fallback:\n"
       "    failure_threshold: 2\n",
       "target.fallback.replicas: required field is missing (line 4)"},
      {"metrics not a list", "target", "target:\n  metrics: {name: q}\n",
       "target.metrics: expected a list (line 2)"},
      {"kpa panic threshold", "kpa", "kpa:\n  panic_threshold_percentage: 100\n",
       "kpa.panic_threshold_percentage: must be between 110 and 1000, got 100 (line 2)"},
      {"kpa stable window", "kpa", "kpa:\n  target_concurrency: 5\n  stable_window_seconds: 5\n",
       "kpa.stable_window_seconds: must be between 6 and 3600, got 5 (line 3)"},
      {"kpa scale-down rate", "kpa", "kpa:\n  max_scale_down_rate: 1\n",
       "kpa.max_scale_down_rate: must be > 1, got 1 (line 2)"},
      {"kpa empty metric list", "kpa", "kpa:\n  concurrency_metrics: []\n",
       "kpa.concurrency_metrics: needs at least one metric name (line 2)"},
      {"kpa wrong type", "kpa", "kpa:\n  target_concurrency: lots\n",
       "kpa.target_concurrency: expected a number, got 'lots' (line 2)"},
      {"kpa misspelled key", "kpa", "kpa:\n  panic_window: 10\n",
       "kpa.panic_window: unknown field; accepted fields: target_concurrency, "
       "target_utilization_percentage, concurrency_metrics, stable_window_seconds, "
       "panic_window_percentage, panic_threshold_percentage, max_scale_up_rate, "
       "max_scale_down_rate, scale_to_zero_grace_period_seconds (line 2)"},
  };
  for (const TargetErrorCase& c : cases) {
    auto policy = ParseFamily(c.yaml, c.family);
    ASSERT_FALSE(policy) << c.name;
    EXPECT_EQ(policy.error().code, ErrorCode::kInvalidArgument) << c.name;
    EXPECT_EQ(policy.error().ToString(), c.want) << c.name;
  }
}

TEST(TargetPolicyParserTest, MinAboveMaxIsRejected) {
  auto target =
      ParseFamily("target:\n  metrics: [{name: q, average_value: 1}]\n", "target", {5, 2});
  ASSERT_FALSE(target);
  EXPECT_EQ(target.error().field, "max_replicas");
  auto kpa = ParseFamily("kpa: {}\n", "kpa", {5, 2});
  ASSERT_FALSE(kpa);
  EXPECT_EQ(kpa.error().field, "max_replicas");
}

TEST(TargetPolicyParserTest, MissingTargetBlockIsAnError) {
  auto policy = ParseTargetPolicy(YAML::Node(), "target", {1, 2});
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().field, "target");
}

TEST(KpaPolicyParserTest, AbsentBlockGivesKnativeDefaults) {
  auto policy = ParseKpaPolicy(YAML::Node(), "kpa", {0, 4});
  ASSERT_TRUE(policy) << policy.error().ToString();
  const auto& c = dynamic_cast<const scale::KpaPolicy&>(**policy).config();
  EXPECT_EQ(c.target_concurrency, 100);
  EXPECT_EQ(c.stable_window_seconds, 60);
  EXPECT_EQ(c.panic_threshold_percentage, 200);
  EXPECT_EQ(c.concurrency_metrics,
            (std::vector<std::string>{"vllm:num_requests_running", "vllm:num_requests_waiting"}));
  EXPECT_EQ((*policy)->Family(), "kpa");
}

// The shipped examples parse with the family parsers (the dispatcher adds the envelope).
TEST(TargetPolicyParserTest, ExamplePoliciesParse) {
  for (const std::string name : {"target", "keda", "kpa"}) {
    const std::string path =
        std::string(GPUSCALE_SOURCE_DIR) + "/examples/policies/" + name + ".yaml";
    auto root = yaml::LoadYamlFile(path);
    ASSERT_TRUE(root) << root.error().ToString();
    const std::string family = (*root)["family"].as<std::string>();
    CommonPolicyFields common{(*root)["min_replicas"].as<int>(), (*root)["max_replicas"].as<int>()};
    auto policy = family == "kpa" ? ParseKpaPolicy((*root)[family], family, common)
                                  : ParseTargetPolicy((*root)[family], family, common);
    ASSERT_TRUE(policy) << path << ": " << policy.error().ToString();
    EXPECT_EQ((*policy)->Family(), family);
  }
}

}  // namespace
}  // namespace gpuscale::config
