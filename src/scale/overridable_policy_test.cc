// OverridablePolicy: the activator rule and the manual override over a scripted policy.
#include "scale/overridable_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "testing/fake_orchestrator.h"

namespace gpuscale::scale {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

class OverridablePolicyTest : public ::testing::Test {
 protected:
  OverridablePolicyTest() {
    auto inner = std::make_unique<testing::ScriptedPolicy>(0, 4);
    inner_ = inner.get();
    inner_->decision_inputs = {{"vllm:num_requests_waiting", 0.0, 5.0}};
    policy_ = std::make_unique<OverridablePolicy>(std::move(inner));
  }

  Decision Evaluate(int waiting) {
    ScalingInput input;
    input.requests_waiting_without_replica = waiting;
    return policy_->Evaluate(input);
  }

  testing::ScriptedPolicy* inner_;
  std::unique_ptr<OverridablePolicy> policy_;
};

// The two decisions that replace the policy's: each says why in its reason, names the
// policy's own reason in its details and keeps what the policy read (history, dashboard).
TEST_F(OverridablePolicyTest, ReplacedDecisionsSayWhyAndKeepThePolicysReasonAndInputs) {
  struct Case {
    std::optional<int> manual;
    int waiting;
    int policy_desired;
    int desired;
    std::string reason;
  };
  const Case cases[] = {
      {std::nullopt, 2, 0, 1,
       "activator: 2 requests wait at the gateway for a ready replica (the scripted policy "
       "chose 0)"},
      {std::nullopt, 1, 0, 1,
       "activator: 1 request wait at the gateway for a ready replica (the scripted policy "
       "chose 0)"},
      {3, 0, 2, 3,
       "manual override: 3 replicas (set with PUT /replicas; the scripted policy would choose "
       "2)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    inner_->desired = c.policy_desired;
    policy_->set_manual(c.manual);
    const Decision d = Evaluate(c.waiting);
    EXPECT_EQ(d.desired_replicas, c.desired);
    EXPECT_EQ(d.reason, c.reason);
    EXPECT_THAT(d.details, ElementsAre("policy: scripted"));
    EXPECT_EQ(d.inputs, inner_->decision_inputs);
  }
  EXPECT_EQ(inner_->inputs.size(), 3u);  // the policy runs under either
}

TEST_F(OverridablePolicyTest, ActivatorStaysOutWithoutWaitingRequests) {
  inner_->desired = 0;
  const Decision d = Evaluate(0);
  EXPECT_EQ(d.desired_replicas, 0);
  EXPECT_EQ(d.reason, "scripted");
  EXPECT_TRUE(d.details.empty());
}

TEST_F(OverridablePolicyTest, ActivatorLeavesANonZeroDecisionAlone) {
  inner_->desired = 3;
  const Decision d = Evaluate(5);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_EQ(d.reason, "scripted");
}

TEST_F(OverridablePolicyTest, TheInnerPolicySeesTheWaitingCount) {
  Evaluate(4);
  ASSERT_EQ(inner_->inputs.size(), 1u);
  EXPECT_EQ(inner_->inputs[0].requests_waiting_without_replica, 4);
}

// The operator's count stands, zero included: the activator does not apply under it.
TEST_F(OverridablePolicyTest, ManualZeroHoldsEvenWhileRequestsWait) {
  inner_->desired = 0;
  policy_->set_manual(0);
  const Decision d = Evaluate(3);
  EXPECT_EQ(d.desired_replicas, 0);
  EXPECT_THAT(d.reason, StartsWith("manual override: 0 replicas"));
}

TEST_F(OverridablePolicyTest, ClearingTheOverrideHandsControlBack) {
  inner_->desired = 2;
  policy_->set_manual(4);
  EXPECT_EQ(Evaluate(0).desired_replicas, 4);
  policy_->set_manual(std::nullopt);
  EXPECT_EQ(policy_->manual(), std::nullopt);
  EXPECT_EQ(Evaluate(0).desired_replicas, 2);
}

TEST_F(OverridablePolicyTest, ForwardsFamilyBoundsAndMetricsOfTheInnerPolicy) {
  inner_->metric_names = {"vllm:num_requests_running"};
  EXPECT_EQ(policy_->Family(), "scripted");
  EXPECT_EQ(policy_->MinReplicas(), 0);
  EXPECT_EQ(policy_->MaxReplicas(), 4);
  EXPECT_THAT(policy_->MetricNames(), ElementsAre("vllm:num_requests_running"));
  EXPECT_EQ(&policy_->inner(), inner_);
}

TEST_F(OverridablePolicyTest, ReplacingTheInnerPolicyKeepsTheOverride) {
  policy_->set_manual(2);
  auto next = std::make_unique<testing::ScriptedPolicy>(1, 3);
  testing::ScriptedPolicy* next_ptr = next.get();
  policy_->set_inner(std::move(next));
  EXPECT_EQ(policy_->MinReplicas(), 1);
  EXPECT_EQ(Evaluate(0).desired_replicas, 2);
  EXPECT_EQ(next_ptr->inputs.size(), 1u);
}

}  // namespace
}  // namespace gpuscale::scale
