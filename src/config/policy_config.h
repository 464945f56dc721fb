// Policy files -> scale::Policy. A policy file is YAML (or JSON) with a common envelope:
//
//   family: target    # rules | ratio | capability | fixed_elastic | target | kpa | slo | disagg
//   min_replicas: 1
//   max_replicas: 8
//   node_plan:        # optional
//     {gpus_per_replica: 2, gpus_per_node: 8, min_nodes: 0, max_nodes: 4}
//   target: {...}     # the family's own block, named after the family
//
// A Corrino recipe JSON (recipe_pod_autoscaling_params / recipe_node_autoscaling_params)
// becomes a target policy plus a node plan. Full schema with one example per family:
// docs/policies.md. Errors name the field and line: `rules[1].comparator: expected one of
// LESS_THAN, ... (line 7)`.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "scale/disagg_policy.h"
#include "scale/node_plan.h"
#include "scale/policy.h"
#include "scale/rules_policy.h"

namespace gpuscale::config {

struct PolicySpec {
  std::unique_ptr<scale::Policy> policy;
  std::optional<scale::NodePlanConfig> node_plan;
};

// Fields every family shares, read by the dispatcher before the family parser runs.
struct CommonPolicyFields {
  int min_replicas = 1;
  int max_replicas = 1;
};

Result<PolicySpec> ParsePolicy(const YAML::Node& root);
// A relative `slo.profile` resolves against the file's folder (config/policy_profile.h).
Result<PolicySpec> LoadPolicyFile(const std::string& path);
Result<PolicySpec> ParseCorrinoRecipe(const YAML::Node& root);
Result<PolicySpec> LoadCorrinoRecipeFile(const std::string& path);

// Family parsers, called by ParsePolicy with the family's block (`root[family]`, possibly
// undefined when the family needs no settings). `path` is the block's field path.
Result<std::unique_ptr<scale::Policy>> ParseRulesPolicy(const YAML::Node& block,
                                                        const std::string& path,
                                                        const CommonPolicyFields& common);
// One rule of the `rules` family (the fields of Backend.AI's model-service autoscaling rules:
// name, source, metric, aggregation, comparator, threshold, step_size, cooldown_seconds,
// min_replicas, max_replicas). Also what the REST API validates a rule body with. `path`
// prefixes field names in errors ("" for an API body) and is the rule's default name. Errors:
// kInvalidArgument naming the field and line (unknown key, bad enum spelling, step_size 0,
// cooldown < 0, max < min).
Result<scale::ScalingRule> ParseScalingRule(const YAML::Node& node, const std::string& path,
                                            const CommonPolicyFields& common);
Result<std::unique_ptr<scale::Policy>> ParseRatioPolicy(const YAML::Node& block,
                                                        const std::string& path,
                                                        const CommonPolicyFields& common);
Result<std::unique_ptr<scale::Policy>> ParseCapabilityPolicy(const YAML::Node& block,
                                                             const std::string& path,
                                                             const CommonPolicyFields& common);
Result<std::unique_ptr<scale::Policy>> ParseFixedElasticPolicy(
    const YAML::Node& block, const std::string& path, const CommonPolicyFields& common);
Result<std::unique_ptr<scale::Policy>> ParseTargetPolicy(const YAML::Node& block,
                                                         const std::string& path,
                                                         const CommonPolicyFields& common);
Result<std::unique_ptr<scale::Policy>> ParseKpaPolicy(const YAML::Node& block,
                                                      const std::string& path,
                                                      const CommonPolicyFields& common);
Result<std::unique_ptr<scale::Policy>> ParseSloPolicy(const YAML::Node& block,
                                                      const std::string& path,
                                                      const CommonPolicyFields& common);
// The `disagg` family (config/policy_parsers_disagg.cc): kInvalidArgument naming the field
// for a missing or unknown role, a value out of range, or neither capacity_tokens_per_second
// nor a profile; for `profile:`, LoadNamedProfile's errors, an aggregated profile or another
// role's, a capacity_tokens_per_second beside it, a target_attainment other than its.
Result<std::unique_ptr<scale::Policy>> ParseDisaggPolicy(const YAML::Node& block,
                                                         const std::string& path,
                                                         const CommonPolicyFields& common);
// Its config alone, where capacity_tokens_per_second may be absent (0, and no profile): the
// simulator fills it from the replica model (config/sim_config.h).
Result<scale::DisaggPolicyConfig> ParseDisaggPolicyConfig(const YAML::Node& block,
                                                          const std::string& path,
                                                          const CommonPolicyFields& common);

// The policy envelope of one pool of a disaggregated service (the simulator's and the
// daemon's): a `disagg` block without a role gets `role`, the pool's; one naming the other
// pool's role is kInvalidArgument (field "disagg.role", with its line). Other families pass
// unchanged. Edits `envelope` in place (a handle into the caller's tree).
Status FitDisaggRole(YAML::Node envelope, scale::PoolRole role);

}  // namespace gpuscale::config
