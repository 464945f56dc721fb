#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config/policy_config.h"
#include "scale/slo_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using ::testing::HasSubstr;

Result<PolicySpec> ParseSlo(const std::string& slo_block) {
  auto root = yaml::ParseYaml("family: slo\nmax_replicas: 8\nslo:\n" + slo_block, "slo.yaml");
  if (!root) return Unexpected<Error>(root.error());
  return ParsePolicy(*root);
}

TEST(SloPolicyParserTest, ReadsTokenModeTrendAndSpareFields) {
  auto spec = ParseSlo(
      "  output_token_weight: 8\n  initial_capacity_tokens_per_second: 32000\n"
      "  trend_window_seconds: 90\n  spare_replicas: 3\n  probe_load_ratio: 0.8\n"
      "  min_capacity_ratio: 1\n  follow_short_rate: false\n  ready_grace_seconds: 0\n"
      "  recurring_bursts: false\n  burst_lead_seconds: 120\n");
  ASSERT_TRUE(spec) << spec.error().ToString();
  const auto& policy = dynamic_cast<const scale::SloPolicy&>(*spec->policy);
  EXPECT_DOUBLE_EQ(policy.config().output_token_weight, 8);
  EXPECT_DOUBLE_EQ(policy.config().initial_capacity_tokens_per_second, 32000);
  EXPECT_DOUBLE_EQ(policy.config().trend_window.count(), 90);
  EXPECT_EQ(policy.config().spare_replicas, 3);
  EXPECT_DOUBLE_EQ(policy.config().probe_load_ratio, 0.8);
  EXPECT_DOUBLE_EQ(policy.config().min_capacity_ratio, 1);
  EXPECT_FALSE(policy.config().follow_short_rate);
  EXPECT_DOUBLE_EQ(policy.config().ready_grace.count(), 0);
  EXPECT_FALSE(policy.config().recurring_bursts);
  EXPECT_DOUBLE_EQ(policy.config().burst_lead.count(), 120);
  EXPECT_DOUBLE_EQ(policy.capacity(), 32000);  // token mode starts from the token figure
}

TEST(SloPolicyParserTest, RejectsBadFieldsNamingThem) {
  struct Case {
    std::string block, want;
  };
  for (const Case& c : {
           Case{"  output_token_weight: 8\n", "slo.initial_capacity_tokens_per_second: must be > 0"},
           Case{"  spare_replicas: -1\n", "slo.spare_replicas: must be >= 0 (line 4)"},
           Case{"  trend_window_seconds: -5\n", "slo.trend_window_seconds: must be in [0,"},
           Case{"  max_scale_down_step: 0\n", "slo.max_scale_down_step: must be >= 1"},
           Case{"  output_token_weight: -1\n", "slo.output_token_weight: must be in [0,"},
           Case{"  probe_load_ratio: 0\n", "slo.probe_load_ratio: must be in (0, 1] (line 4)"},
           Case{"  min_capacity_ratio: 1.5\n", "slo.min_capacity_ratio: must be in (0, 1] (line 4)"},
           Case{"  follow_short_rate: sometimes\n", "slo.follow_short_rate"},
           Case{"  ready_grace_seconds: -15\n", "slo.ready_grace_seconds: must be in [0,"},
           Case{"  burst_lead_seconds: -1\n", "slo.burst_lead_seconds: must be in [0,"},
           Case{"  recurring_bursts: often\n", "slo.recurring_bursts"},
       }) {
    auto spec = ParseSlo(c.block);
    ASSERT_FALSE(spec) << c.block;
    EXPECT_THAT(spec.error().ToString(), HasSubstr(c.want)) << c.block;
  }
}

}  // namespace
}  // namespace gpuscale::config
