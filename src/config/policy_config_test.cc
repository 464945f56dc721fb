#include "config/policy_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "scale/rules_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using ::testing::HasSubstr;

Result<PolicySpec> ParsePolicyYaml(const std::string& text) {
  auto root = yaml::ParseYaml(text, "test.yaml");
  if (!root) return Unexpected<Error>(root.error());
  return ParsePolicy(*root);
}

TEST(PolicyConfigTest, DispatchesToTheNamedFamily) {
  for (const std::string family : {"rules", "ratio", "capability", "fixed_elastic"}) {
    SCOPED_TRACE(family);
    std::string text = "family: " + family + "\nmin_replicas: 2\nmax_replicas: 5\n";
    if (family == "rules") {
      text += "rules:\n  - {metric: m, comparator: GREATER_THAN, threshold: 1, step_size: 1}\n";
    }
    auto spec = ParsePolicyYaml(text);
    ASSERT_TRUE(spec) << spec.error().ToString();
    EXPECT_EQ(spec->policy->Family(), family);
    EXPECT_EQ(spec->policy->MinReplicas(), 2);
    EXPECT_EQ(spec->policy->MaxReplicas(), 5);
    EXPECT_FALSE(spec->node_plan);
  }
}

TEST(PolicyConfigTest, MinReplicasDefaultsToOne) {
  auto spec = ParsePolicyYaml("family: ratio\nmax_replicas: 3\n");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->policy->MinReplicas(), 1);
}

TEST(PolicyConfigTest, ReadsTheNodePlan) {
  auto spec = ParsePolicyYaml(
      "family: ratio\nmax_replicas: 3\nnode_plan: {gpus_per_replica: 2, gpus_per_node: 8, "
      "min_nodes: 1, max_nodes: 2}\n");
  ASSERT_TRUE(spec) << spec.error().ToString();
  ASSERT_TRUE(spec->node_plan);
  EXPECT_EQ(spec->node_plan->gpus_per_replica, 2);
  EXPECT_EQ(spec->node_plan->gpus_per_node, 8);
  EXPECT_EQ(spec->node_plan->min_nodes, 1);
  EXPECT_EQ(spec->node_plan->max_nodes, 2);
}

struct PolicyErrorCase {
  const char* name;
  std::string text;
  std::string expected;  // Error::ToString()
};

TEST(PolicyConfigTest, EnvelopeErrorsNameFieldAndLine) {
  const std::vector<PolicyErrorCase> cases = {
      {"not a mapping", "- a\n",
       "<root>: expected a mapping with family, min_replicas and max_replicas (line 1)"},
      {"no family", "max_replicas: 2\n", "family: required field is missing (line 1)"},
      {"unknown family", "family: magic\nmax_replicas: 2\n",
       "family: unknown policy family 'magic'; expected one of rules, ratio, capability, "
       "fixed_elastic, target, kpa, slo, disagg (line 1)"},
      {"no max", "family: ratio\n", "max_replicas: required field is missing (line 1)"},
      {"min above max", "family: ratio\nmin_replicas: 3\nmax_replicas: 2\n",
       "max_replicas: must be >= min_replicas (3), got 2 (line 3)"},
      {"negative min", "family: ratio\nmin_replicas: -1\nmax_replicas: 2\n",
       "min_replicas: must be >= 0 (line 2)"},
      {"not an integer", "family: ratio\nmax_replicas: many\n",
       "max_replicas: expected an integer, got 'many' (line 2)"},
      {"typo", "family: ratio\nmax_replicas: 2\nmin_replica: 1\n",
       "min_replica: unknown field; accepted fields: family, min_replicas, max_replicas, "
       "node_plan, ratio (line 3)"},
      {"another family's block", "family: ratio\nmax_replicas: 2\nrules: []\n",
       "rules: this block belongs to family 'rules', but the file says family: ratio (line 3)"},
      {"node plan max below min",
       "family: ratio\nmax_replicas: 2\nnode_plan:\n  min_nodes: 3\n"
       "  max_nodes: 1\n",
       "node_plan.max_nodes: must be >= min_nodes (3), got 1 (line 5)"},
      {"node plan replica too big",
       "family: ratio\nmax_replicas: 2\nnode_plan:\n"
       "  gpus_per_replica: 16\n  gpus_per_node: 8\n  max_nodes: 1\n",
       "node_plan.gpus_per_node: must be >= gpus_per_replica (16) so that a replica fits on a "
       "node, got 8 (line 5)"},
      {"node plan zero gpus",
       "family: ratio\nmax_replicas: 2\nnode_plan:\n"
       "  gpus_per_replica: 0\n  max_nodes: 1\n",
       "node_plan.gpus_per_replica: must be >= 1 (line 4)"},
      {"node plan unknown key", "family: ratio\nmax_replicas: 2\nnode_plan:\n  max_node: 1\n",
       "node_plan.max_node: unknown field; accepted fields: gpus_per_replica, gpus_per_node, "
       "min_nodes, max_nodes (line 4)"},
  };
  for (const PolicyErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto spec = ParsePolicyYaml(c.text);
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().ToString(), c.expected);
    EXPECT_EQ(spec.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(PolicyConfigTest, LoadsEveryExamplePolicyOfTheseFamilies) {
  const std::filesystem::path dir =
      std::filesystem::path(GPUSCALE_SOURCE_DIR) / "examples" / "policies";
  for (const char* name : {"rules.yaml", "ratio.yaml", "capability.yaml", "fixed_elastic.yaml"}) {
    SCOPED_TRACE(name);
    auto spec = LoadPolicyFile((dir / name).string());
    ASSERT_TRUE(spec) << spec.error().ToString();
    EXPECT_EQ(std::string(spec->policy->Family()) + ".yaml", name);
  }
  auto rules = LoadPolicyFile((dir / "rules.yaml").string());
  ASSERT_TRUE(rules);
  EXPECT_TRUE(rules->node_plan);
  auto* policy = dynamic_cast<scale::RulesPolicy*>(rules->policy.get());
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->config().rules.size(), 3u);
  EXPECT_TRUE(policy->warnings().empty());
}

TEST(PolicyConfigTest, MissingFileIsNotFound) {
  auto spec = LoadPolicyFile("/nonexistent/policy.yaml");
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(spec.error().message, HasSubstr("/nonexistent/policy.yaml"));
}

}  // namespace
}  // namespace gpuscale::config
