// Family parsers for the Scaler/Backend.AI-style families: rules, ratio, capability and
// fixed_elastic (docs/policies.md has the schemas). Every error names the field path and
// line, e.g. `rules[1].comparator: expected one of LESS_THAN, ... (line 7)`.
#include <fmt/format.h>

#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "config/policy_config.h"
#include "config/read_named.h"
#include "scale/capability_policy.h"
#include "scale/enum_names.h"
#include "scale/fixed_elastic_policy.h"
#include "scale/ratio_policy.h"
#include "scale/rules_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {

namespace {

// The replica bounds of one rule: default to the policy's, min <= max.
Status ParseRuleBounds(const YAML::Node& node, const std::string& path,
                       const CommonPolicyFields& common, scale::ScalingRule& rule) {
  GS_ASSIGN_OR_RETURN(rule.min_replicas,
                      yaml::ReadInt(node, "min_replicas", path, common.min_replicas));
  GS_ASSIGN_OR_RETURN(rule.max_replicas,
                      yaml::ReadInt(node, "max_replicas", path, common.max_replicas));
  if (rule.min_replicas < 0) {
    return yaml::FieldError(node["min_replicas"], yaml::Join(path, "min_replicas"), "must be >= 0");
  }
  if (rule.max_replicas < rule.min_replicas) {
    return yaml::FieldError(
        node["max_replicas"], yaml::Join(path, "max_replicas"),
        fmt::format("must be >= min_replicas ({}), got {}", rule.min_replicas, rule.max_replicas));
  }
  return OkStatus();
}

struct TaskRatios {
  double upper = 0;
  double lower = 0;
};

// upper_task_ratio / lower_task_ratio with family defaults; 0 <= lower < upper, or the
// policy would add and remove a group on alternate ticks.
Result<TaskRatios> ParseTaskRatios(const YAML::Node& block, const std::string& path,
                                   TaskRatios defaults) {
  TaskRatios ratios;
  GS_ASSIGN_OR_RETURN(ratios.upper,
                      yaml::ReadDouble(block, "upper_task_ratio", path, defaults.upper));
  GS_ASSIGN_OR_RETURN(ratios.lower,
                      yaml::ReadDouble(block, "lower_task_ratio", path, defaults.lower));
  if (ratios.upper <= 0) {
    return yaml::FieldError(block["upper_task_ratio"], yaml::Join(path, "upper_task_ratio"),
                            "must be > 0");
  }
  if (ratios.lower < 0 || ratios.lower >= ratios.upper) {
    return yaml::FieldError(block["lower_task_ratio"], yaml::Join(path, "lower_task_ratio"),
                            fmt::format("must be >= 0 and < upper_task_ratio ({}), got {}",
                                        ratios.upper, ratios.lower));
  }
  return ratios;
}

// An optional mapping block: undefined is fine (all defaults), anything else must be a map
// of known keys.
Status CheckOptionalBlock(const YAML::Node& block, const std::string& path,
                          std::initializer_list<std::string_view> known) {
  if (!block.IsDefined()) return OkStatus();
  return yaml::CheckKnownKeys(block, path, known);
}

}  // namespace

Result<scale::ScalingRule> ParseScalingRule(const YAML::Node& node, const std::string& path,
                                            const CommonPolicyFields& common) {
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(node, path,
                           {"name", "source", "metric", "aggregation", "comparator", "threshold",
                            "step_size", "cooldown_seconds", "min_replicas", "max_replicas"}));
  scale::ScalingRule rule;
  GS_ASSIGN_OR_RETURN(rule.name, yaml::ReadString(node, "name", path, path));
  GS_ASSIGN_OR_RETURN(rule.source, ReadNamed(node, "source", path, scale::MetricSourceSpellings(),
                                             {scale::MetricSource::kInferenceFramework}));
  GS_ASSIGN_OR_RETURN(rule.metric, yaml::ReadString(node, "metric", path));
  if (rule.metric.empty()) {
    return yaml::FieldError(node["metric"], yaml::Join(path, "metric"), "must not be empty");
  }
  GS_ASSIGN_OR_RETURN(rule.aggregation,
                      ReadNamed(node, "aggregation", path, scale::AggregationSpellings(),
                                {scale::Aggregation::kAverage}));
  GS_ASSIGN_OR_RETURN(rule.comparator,
                      ReadNamed(node, "comparator", path, scale::ComparatorSpellings()));
  GS_ASSIGN_OR_RETURN(rule.threshold, yaml::ReadDouble(node, "threshold", path));
  GS_ASSIGN_OR_RETURN(rule.step_size, yaml::ReadInt(node, "step_size", path));
  if (rule.step_size == 0) {
    return yaml::FieldError(node["step_size"], yaml::Join(path, "step_size"),
                            "must not be 0 (positive scales out, negative scales in)");
  }
  GS_ASSIGN_OR_RETURN(double cooldown, yaml::ReadDouble(node, "cooldown_seconds", path, 0.0));
  if (cooldown < 0) {
    return yaml::FieldError(node["cooldown_seconds"], yaml::Join(path, "cooldown_seconds"),
                            "must be >= 0");
  }
  rule.cooldown = Seconds{cooldown};
  GS_RETURN_IF_ERROR(ParseRuleBounds(node, path, common, rule));
  return rule;
}

Result<std::unique_ptr<scale::Policy>> ParseRulesPolicy(const YAML::Node& block,
                                                        const std::string& path,
                                                        const CommonPolicyFields& common) {
  if (!block.IsDefined() || !block.IsSequence() || block.size() == 0) {
    return yaml::FieldError(block, path, "expected a non-empty list of rules");
  }
  scale::RulesPolicyConfig config{common.min_replicas, common.max_replicas, {}};
  std::set<std::string> names;
  for (size_t i = 0; i < block.size(); ++i) {
    const std::string rule_path = yaml::Index(path, i);
    GS_ASSIGN_OR_RETURN(scale::ScalingRule rule, ParseScalingRule(block[i], rule_path, common));
    if (!names.insert(rule.name).second) {
      return yaml::FieldError(block[i]["name"], yaml::Join(rule_path, "name"),
                              fmt::format("duplicate rule name '{}'", rule.name));
    }
    config.rules.push_back(std::move(rule));
  }
  return std::make_unique<scale::RulesPolicy>(std::move(config));
}

Result<std::unique_ptr<scale::Policy>> ParseRatioPolicy(const YAML::Node& block,
                                                        const std::string& path,
                                                        const CommonPolicyFields& common) {
  GS_RETURN_IF_ERROR(CheckOptionalBlock(
      block, path, {"upper_task_ratio", "lower_task_ratio", "workers_per_group"}));
  GS_ASSIGN_OR_RETURN(TaskRatios ratios, ParseTaskRatios(block, path, {10, 1}));
  GS_ASSIGN_OR_RETURN(int per_group, yaml::ReadInt(block, "workers_per_group", path, 1));
  if (per_group < 1) {
    return yaml::FieldError(block["workers_per_group"], yaml::Join(path, "workers_per_group"),
                            "must be >= 1");
  }
  return std::make_unique<scale::RatioPolicy>(scale::RatioPolicyConfig{
      common.min_replicas, common.max_replicas, ratios.upper, ratios.lower, per_group});
}

Result<std::unique_ptr<scale::Policy>> ParseCapabilityPolicy(const YAML::Node& block,
                                                             const std::string& path,
                                                             const CommonPolicyFields& common) {
  GS_RETURN_IF_ERROR(CheckOptionalBlock(block, path, {"upper_task_ratio", "lower_task_ratio"}));
  GS_ASSIGN_OR_RETURN(TaskRatios ratios, ParseTaskRatios(block, path, {5, 0.5}));
  return std::make_unique<scale::CapabilityPolicy>(scale::CapabilityPolicyConfig{
      common.min_replicas, common.max_replicas, ratios.upper, ratios.lower});
}

Result<std::unique_ptr<scale::Policy>> ParseFixedElasticPolicy(const YAML::Node& block,
                                                               const std::string& path,
                                                               const CommonPolicyFields& common) {
  GS_RETURN_IF_ERROR(CheckOptionalBlock(block, path, {"upper_task_ratio", "lower_task_ratio"}));
  GS_ASSIGN_OR_RETURN(TaskRatios ratios, ParseTaskRatios(block, path, {10, 1}));
  return std::make_unique<scale::FixedElasticPolicy>(scale::FixedElasticPolicyConfig{
      common.min_replicas, common.max_replicas, ratios.upper, ratios.lower});
}

}  // namespace gpuscale::config
