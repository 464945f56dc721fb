// Policy::MetricNames: what each family reads from ScalingInput::metrics, so the daemon can
// name a metric no replica exports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "scale/kpa_policy.h"
#include "scale/ratio_policy.h"
#include "scale/rules_policy.h"
#include "scale/slo_policy.h"
#include "scale/target_policy.h"

namespace gpuscale::scale {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(PolicyMetricNamesTest, EachFamilyNamesWhatItReads) {
  auto metric = [](std::string name) {
    TargetMetric m;
    m.name = std::move(name);
    return m;
  };
  TargetPolicyConfig target;
  target.metrics = {metric("vllm:kv_cache_usage_perc"), metric("queue")};
  target.metrics[1].query = "sum(vllm:num_requests_waiting)";
  EXPECT_THAT(TargetPolicy(target).MetricNames(), ElementsAre("vllm:kv_cache_usage_perc", "queue"));

  RulesPolicyConfig rules;
  for (const char* name : {"a", "b", "a"}) {
    ScalingRule rule;
    rule.metric = name;
    rules.rules.push_back(rule);
  }
  EXPECT_THAT(RulesPolicy(rules).MetricNames(), ElementsAre("a", "b"));

  EXPECT_THAT(KpaPolicy(KpaPolicyConfig{}).MetricNames(),
              ElementsAre("vllm:num_requests_running", "vllm:num_requests_waiting"));

  const std::vector<std::string> slo_names = SloPolicy(SloPolicyConfig{}).MetricNames();
  EXPECT_THAT(slo_names, ElementsAre("vllm:num_requests_waiting", "vllm:num_requests_running",
                                     "sum(rate(vllm:request_success_total[30s]))",
                                     "sum(rate(vllm:request_success_total[2m]))",
                                     "slo:ttft_violation_ratio:1m", "slo:tpot_violation_ratio:1m"));
  SloPolicyConfig tokens;
  tokens.output_token_weight = 4;
  tokens.initial_capacity_tokens_per_second = 1000;
  EXPECT_EQ(SloPolicy(tokens).MetricNames().size(), slo_names.size() + 2);

  // Task ratios read input.tasks, not metrics.
  EXPECT_THAT(RatioPolicy(RatioPolicyConfig{}).MetricNames(), IsEmpty());
}

}  // namespace
}  // namespace gpuscale::scale
