#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/policy_config.h"
#include "scale/capability_policy.h"
#include "scale/fixed_elastic_policy.h"
#include "scale/ratio_policy.h"
#include "scale/rules_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

Result<PolicySpec> ParseScalerYaml(const std::string& text) {
  auto root = yaml::ParseYaml(text, "test.yaml");
  if (!root) return Unexpected<Error>(root.error());
  return ParsePolicy(*root);
}

const char* const kRulesHeader = "family: rules\nmin_replicas: 1\nmax_replicas: 6\nrules:\n";

TEST(PolicyParsersScalerTest, ReadsEveryRuleField) {
  auto spec = ParseScalerYaml(std::string(kRulesHeader) +
                              "  - name: hot\n"
                              "    source: kernel\n"
                              "    metric: gpu_utilization_ratio\n"
                              "    aggregation: max\n"
                              "    comparator: GREATER_THAN_OR_EQUAL\n"
                              "    threshold: 0.9\n"
                              "    step_size: 2\n"
                              "    cooldown_seconds: 30\n"
                              "    min_replicas: 2\n"
                              "    max_replicas: 4\n"
                              "  - metric: vllm:num_requests_waiting\n"
                              "    comparator: LESS_THAN\n"
                              "    threshold: 1\n"
                              "    step_size: -1\n");
  ASSERT_TRUE(spec) << spec.error().ToString();
  auto* policy = dynamic_cast<scale::RulesPolicy*>(spec->policy.get());
  ASSERT_NE(policy, nullptr);
  const auto& rules = policy->config().rules;
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].name, "hot");
  EXPECT_EQ(rules[0].source, scale::MetricSource::kKernel);
  EXPECT_EQ(rules[0].aggregation, scale::Aggregation::kMax);
  EXPECT_EQ(rules[0].comparator, scale::Comparator::kGreaterThanOrEqual);
  EXPECT_DOUBLE_EQ(rules[0].threshold, 0.9);
  EXPECT_EQ(rules[0].step_size, 2);
  EXPECT_DOUBLE_EQ(rules[0].cooldown.count(), 30);
  EXPECT_EQ(rules[0].min_replicas, 2);
  EXPECT_EQ(rules[0].max_replicas, 4);
  // Defaults: name from the path, inference_framework, average, no cooldown, policy bounds.
  EXPECT_EQ(rules[1].name, "rules[1]");
  EXPECT_EQ(rules[1].source, scale::MetricSource::kInferenceFramework);
  EXPECT_EQ(rules[1].aggregation, scale::Aggregation::kAverage);
  EXPECT_DOUBLE_EQ(rules[1].cooldown.count(), 0);
  EXPECT_EQ(rules[1].min_replicas, 1);
  EXPECT_EQ(rules[1].max_replicas, 6);
}

TEST(PolicyParsersScalerTest, ReadsRatioFamiliesWithDefaults) {
  auto ratio = ParseScalerYaml("family: ratio\nmax_replicas: 4\n");
  ASSERT_TRUE(ratio);
  auto* r = dynamic_cast<scale::RatioPolicy*>(ratio->policy.get());
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(r->config().upper_task_ratio, 10);
  EXPECT_DOUBLE_EQ(r->config().lower_task_ratio, 1);
  EXPECT_EQ(r->config().workers_per_group, 1);

  auto capability = ParseScalerYaml("family: capability\nmax_replicas: 4\ncapability:\n");
  ASSERT_TRUE(capability);
  auto* c = dynamic_cast<scale::CapabilityPolicy*>(capability->policy.get());
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->config().upper_task_ratio, 5);
  EXPECT_DOUBLE_EQ(c->config().lower_task_ratio, 0.5);

  auto elastic = ParseScalerYaml(
      "family: fixed_elastic\nmax_replicas: 4\nfixed_elastic: {upper_task_ratio: 20, "
      "lower_task_ratio: 2}\n");
  ASSERT_TRUE(elastic);
  auto* e = dynamic_cast<scale::FixedElasticPolicy*>(elastic->policy.get());
  ASSERT_NE(e, nullptr);
  EXPECT_DOUBLE_EQ(e->config().upper_task_ratio, 20);
  EXPECT_DOUBLE_EQ(e->config().lower_task_ratio, 2);
}

struct ScalerErrorCase {
  const char* name;
  std::string text;
  std::string expected;  // Error::ToString()
};

std::string Rule(const std::string& body) { return std::string(kRulesHeader) + body; }

TEST(PolicyParsersScalerTest, RuleErrorsNameFieldAndLine) {
  const std::string ok_fields = "    threshold: 1\n    step_size: 1\n";
  const std::vector<ScalerErrorCase> cases = {
      {"no rules block", "family: rules\nmax_replicas: 2\n",
       "rules: expected a non-empty list of rules"},
      {"empty list", "family: rules\nmax_replicas: 2\nrules: []\n",
       "rules: expected a non-empty list of rules (line 3)"},
      {"a mapping", "family: rules\nmax_replicas: 2\nrules:\n  metric: m\n",
       "rules: expected a non-empty list of rules (line 4)"},
      {"bad comparator", Rule("  - metric: m\n    comparator: ABOVE\n" + ok_fields),
       "rules[0].comparator: expected one of LESS_THAN, LESS_THAN_OR_EQUAL, GREATER_THAN, "
       "GREATER_THAN_OR_EQUAL, got 'ABOVE' (line 6)"},
      {"comparator of the second rule",
       Rule("  - {metric: m, comparator: LESS_THAN, threshold: 1, step_size: -1}\n"
            "  - metric: m\n    comparator: greater_than\n" +
            ok_fields),
       "rules[1].comparator: expected one of LESS_THAN, LESS_THAN_OR_EQUAL, GREATER_THAN, "
       "GREATER_THAN_OR_EQUAL, got 'greater_than' (line 7)"},
      {"missing comparator", Rule("  - metric: m\n" + ok_fields),
       "rules[0].comparator: required field is missing (line 5)"},
      {"missing metric", Rule("  - comparator: LESS_THAN\n" + ok_fields),
       "rules[0].metric: required field is missing (line 5)"},
      {"empty metric", Rule("  - metric: ''\n    comparator: LESS_THAN\n" + ok_fields),
       "rules[0].metric: must not be empty (line 5)"},
      {"bad source",
       Rule("  - metric: m\n    source: prom\n    comparator: LESS_THAN\n" + ok_fields),
       "rules[0].source: expected one of inference_framework, kernel, prometheus, gateway, got "
       "'prom' (line 6)"},
      {"bad aggregation",
       Rule("  - metric: m\n    aggregation: p99\n    comparator: LESS_THAN\n" + ok_fields),
       "rules[0].aggregation: expected one of average, max, min, sum, got 'p99' (line 6)"},
      {"threshold not a number",
       Rule("  - metric: m\n    comparator: LESS_THAN\n    threshold: high\n    step_size: 1\n"),
       "rules[0].threshold: expected a number, got 'high' (line 7)"},
      {"zero step",
       Rule("  - metric: m\n    comparator: LESS_THAN\n    threshold: 1\n    step_size: 0\n"),
       "rules[0].step_size: must not be 0 (positive scales out, negative scales in) (line 8)"},
      {"negative cooldown",
       Rule("  - metric: m\n    comparator: LESS_THAN\n" + ok_fields +
            "    cooldown_seconds: -5\n"),
       "rules[0].cooldown_seconds: must be >= 0 (line 9)"},
      {"rule min above max",
       Rule("  - metric: m\n    comparator: LESS_THAN\n" + ok_fields +
            "    min_replicas: 4\n    max_replicas: 2\n"),
       "rules[0].max_replicas: must be >= min_replicas (4), got 2 (line 10)"},
      {"unknown key",
       Rule("  - metric: m\n    comparator: LESS_THAN\n" + ok_fields + "    cooldown: 5\n"),
       "rules[0].cooldown: unknown field; accepted fields: name, source, metric, aggregation, "
       "comparator, threshold, step_size, cooldown_seconds, min_replicas, max_replicas "
       "(line 9)"},
      {"duplicate name",
       Rule("  - {name: a, metric: m, comparator: LESS_THAN, threshold: 1, step_size: -1}\n"
            "  - {name: a, metric: m, comparator: GREATER_THAN, threshold: 5, step_size: 1}\n"),
       "rules[1].name: duplicate rule name 'a' (line 6)"},
  };
  for (const ScalerErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto spec = ParseScalerYaml(c.text);
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().ToString(), c.expected);
  }
}

TEST(PolicyParsersScalerTest, RatioFamilyErrorsNameFieldAndLine) {
  const std::vector<ScalerErrorCase> cases = {
      {"lower above upper",
       "family: ratio\nmax_replicas: 2\nratio:\n  upper_task_ratio: 2\n  lower_task_ratio: 3\n",
       "ratio.lower_task_ratio: must be >= 0 and < upper_task_ratio (2), got 3 (line 5)"},
      {"zero upper", "family: ratio\nmax_replicas: 2\nratio:\n  upper_task_ratio: 0\n",
       "ratio.upper_task_ratio: must be > 0 (line 4)"},
      {"zero workers", "family: ratio\nmax_replicas: 2\nratio:\n  workers_per_group: 0\n",
       "ratio.workers_per_group: must be >= 1 (line 4)"},
      {"not a mapping", "family: ratio\nmax_replicas: 2\nratio: [1]\n",
       "ratio: expected a mapping (line 3)"},
      {"capability typo", "family: capability\nmax_replicas: 2\ncapability:\n  upper: 3\n",
       "capability.upper: unknown field; accepted fields: upper_task_ratio, lower_task_ratio "
       "(line 4)"},
      {"capability defaults checked against a lower upper",
       "family: capability\nmax_replicas: 2\ncapability:\n  upper_task_ratio: 0.25\n",
       "capability.lower_task_ratio: must be >= 0 and < upper_task_ratio (0.25), got 0.5"},
      {"fixed_elastic negative lower",
       "family: fixed_elastic\nmax_replicas: 2\nfixed_elastic:\n  lower_task_ratio: -1\n",
       "fixed_elastic.lower_task_ratio: must be >= 0 and < upper_task_ratio (10), got -1 "
       "(line 4)"},
      {"fixed_elastic bad number",
       "family: fixed_elastic\nmax_replicas: 2\nfixed_elastic:\n  upper_task_ratio: lots\n",
       "fixed_elastic.upper_task_ratio: expected a number, got 'lots' (line 4)"},
  };
  for (const ScalerErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto spec = ParseScalerYaml(c.text);
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().ToString(), c.expected);
  }
}

}  // namespace
}  // namespace gpuscale::config
