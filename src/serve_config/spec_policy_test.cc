// A service's policy from its spec alone.
#include "serve_config/spec_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scale/rules_policy.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

ServiceConfig Service() {
  ServiceConfig c;
  c.name = "chat";
  c.command = {"serve"};
  c.min_replicas = 1;
  c.max_replicas = 4;
  return c;
}

TEST(SpecPolicyTest, PolicyBlockGetsTheServiceBounds) {
  ServiceConfig s = Service();
  s.policy_yaml =
      "family: target\nmin_replicas: 1\nmax_replicas: 99\ntarget:\n  metrics:\n"
      "    - name: q\n      query: sum(vllm:num_requests_waiting)\n"
      "      type: AverageValue\n      average_value: 5\n";
  auto policy = SpecPolicy(s);
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ((*policy)->Family(), "target");
  EXPECT_EQ((*policy)->MaxReplicas(), 4);
}

TEST(SpecPolicyTest, NoPolicyBlockIsRulesWithoutRules) {
  auto policy = SpecPolicy(Service());
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ((*policy)->Family(), "rules");
  EXPECT_EQ((*policy)->MaxReplicas(), 4);
  EXPECT_TRUE(dynamic_cast<scale::RulesPolicy&>(**policy).config().rules.empty());
}

TEST(SpecPolicyTest, BadPolicyBlockNamesTheFieldUnderPolicy) {
  ServiceConfig s = Service();
  s.policy_yaml = "family: nonsense\n";
  auto policy = SpecPolicy(s);
  ASSERT_FALSE(policy);
  EXPECT_THAT(policy.error().field, HasSubstr("policy"));
}

}  // namespace
}  // namespace gpuscale::daemon
