// Every metric-reading family reports what it read and against what (Decision::inputs), for
// the daemon's history charts.
#include <gtest/gtest.h>

#include <memory>

#include "scale/kpa_policy.h"
#include "scale/rules_policy.h"
#include "scale/target_policy.h"

namespace gpuscale::scale {
namespace {

ScalingInput PerReplicaInput(double per_replica) {
  ScalingInput in;
  in.now = Seconds{100};
  in.current_replicas = 2;
  in.ready_replicas = 2;
  in.metrics["q"].per_replica = {per_replica, per_replica};
  in.metrics["vllm:num_requests_running"].per_replica = {per_replica, per_replica};
  return in;
}

TEST(DecisionInputsTest, FamiliesReportValueAndTarget) {
  RulesPolicyConfig rules;
  rules.max_replicas = 4;
  ScalingRule rule;
  rule.name = "busy";
  rule.metric = "q";
  rule.threshold = 5;
  rules.rules = {rule};
  TargetPolicyConfig target;
  target.max_replicas = 4;
  TargetMetric m;
  m.name = "q";
  m.target = 4;
  target.metrics = {m};
  KpaPolicyConfig kpa;
  kpa.max_replicas = 4;
  kpa.target_concurrency = 10;
  kpa.target_utilization_percentage = 50;
  kpa.concurrency_metrics = {"vllm:num_requests_running"};
  struct Case {
    std::string name;
    std::unique_ptr<Policy> policy;
    DecisionInput want;
  };
  Case cases[] = {
      {"rules", std::make_unique<RulesPolicy>(rules), {"q (busy)", 3, 5}},
      {"target", std::make_unique<TargetPolicy>(target), {"q", 3, 4}},
      // KPA: total concurrency 6 over 2 ready replicas, against 10 x 50 %.
      {"kpa", std::make_unique<KpaPolicy>(kpa), {"concurrency per replica", 3, 5}},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    Decision d = c.policy->Evaluate(PerReplicaInput(3));
    ASSERT_EQ(d.inputs.size(), 1u);
    EXPECT_EQ(d.inputs[0], c.want);
  }
}

// A metric with no data is reported without a value (never as 0).
TEST(DecisionInputsTest, NoDataHasNoValue) {
  RulesPolicyConfig rules;
  rules.max_replicas = 4;
  ScalingRule rule;
  rule.name = "busy";
  rule.metric = "absent";
  rule.threshold = 5;
  rules.rules = {rule};
  RulesPolicy policy(rules);
  Decision d = policy.Evaluate(PerReplicaInput(3));
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_FALSE(d.inputs[0].value);
  EXPECT_EQ(d.inputs[0].target, 5);
}

}  // namespace
}  // namespace gpuscale::scale
