// Service policies from specs and stored rules; PromQL queries a policy needs.
#include "daemon/service_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

ServiceConfig Service() {
  ServiceConfig c;
  c.name = "chat";
  c.command = {"serve"};
  c.min_replicas = 1;
  c.max_replicas = 4;
  return c;
}

store::RuleRow Rule() {
  store::RuleRow r;
  r.id = 7;
  r.service = "chat";
  r.name = "queue";
  r.metric = "vllm:num_requests_waiting";
  r.comparator = "GREATER_THAN";
  r.threshold = 5;
  r.step_size = 1;
  return r;
}

TEST(RuleFromRowTest, ConvertsFieldsAndDefaultsBoundsToTheService) {
  auto rule = RuleFromRow(Rule(), Service());
  ASSERT_TRUE(rule) << rule.error().ToString();
  EXPECT_EQ(rule->comparator, scale::Comparator::kGreaterThan);
  EXPECT_EQ(rule->source, scale::MetricSource::kInferenceFramework);
  EXPECT_EQ(rule->min_replicas, 1);
  EXPECT_EQ(rule->max_replicas, 4);
}

TEST(RuleFromRowTest, BadFieldsAreNamed) {
  struct Case {
    void (*mutate)(store::RuleRow&);
    std::string field;
  };
  const Case cases[] = {
      {[](store::RuleRow& r) { r.comparator = "BIGGER"; }, "comparator"},
      {[](store::RuleRow& r) { r.source = "nvml"; }, "source"},
      {[](store::RuleRow& r) { r.aggregation = "median"; }, "aggregation"},
      {[](store::RuleRow& r) { r.step_size = 0; }, "step_size"},
      {[](store::RuleRow& r) { r.metric = ""; }, "metric"},
      {[](store::RuleRow& r) { r.cooldown = Seconds{-1}; }, "cooldown_seconds"},
      {[](store::RuleRow& r) {
         r.min_replicas = 3;
         r.max_replicas = 2;
       },
       "max_replicas"},
  };
  for (const Case& c : cases) {
    store::RuleRow row = Rule();
    c.mutate(row);
    auto rule = RuleFromRow(row, Service());
    ASSERT_FALSE(rule) << c.field;
    EXPECT_EQ(rule.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(rule.error().field, c.field);
  }
}

TEST(BuildServicePolicyTest, EmptySpecPolicyIsRulesFromTheStoreSkippingDisabled) {
  store::RuleRow off = Rule();
  off.enabled = false;
  off.comparator = "nonsense";  // disabled rules are not even converted
  auto policy = BuildServicePolicy(Service(), {Rule(), off});
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ((*policy)->Family(), "rules");
  EXPECT_EQ((*policy)->MaxReplicas(), 4);
  EXPECT_EQ(dynamic_cast<scale::RulesPolicy&>(**policy).config().rules.size(), 1u);
}

TEST(BuildServicePolicyTest, SpecPolicyGetsTheServiceBounds) {
  ServiceConfig s = Service();
  s.policy_yaml =
      "family: target\nmin_replicas: 1\nmax_replicas: 99\ntarget:\n  metrics:\n"
      "    - name: q\n      query: sum(vllm:num_requests_waiting)\n"
      "      type: AverageValue\n      average_value: 5\n";
  auto policy = BuildServicePolicy(s, {});
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ((*policy)->Family(), "target");
  EXPECT_EQ((*policy)->MaxReplicas(), 4);
  const std::vector<PromQuery> queries = PromQueriesOf(**policy);
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(queries[0].key, "q");
  EXPECT_EQ(queries[0].promql, "sum(vllm:num_requests_waiting)");
}

TEST(PromQueriesOfTest, PrometheusRulesAreQueriedLocalNamesAreNot) {
  store::RuleRow prom = Rule();
  prom.source = "prometheus";
  prom.metric = "sum(rate(x[1m]))";
  store::RuleRow local = Rule();
  local.name = "rate";
  local.source = "prometheus";
  local.metric = "sum(rate(vllm:request_success_total[30s]))";  // computed from scrapes
  store::RuleRow tokens = local;
  tokens.name = "tokens";
  tokens.metric = "sum(rate(vllm:prompt_tokens_total[30s]))";  // computed from scrapes
  auto policy = BuildServicePolicy(Service(), {Rule(), prom, local, tokens});
  ASSERT_TRUE(policy) << policy.error().ToString();
  const std::vector<PromQuery> queries = PromQueriesOf(**policy);
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(queries[0].promql, "sum(rate(x[1m]))");
}

}  // namespace
}  // namespace gpuscale::daemon
