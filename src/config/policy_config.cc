// Policy files: the envelope shared by every family, then one explicit table from family
// name to family parser (policy_config.h documents the format).
#include "config/policy_config.h"

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <string_view>

#include "config/policy_profile.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {

namespace {

using FamilyParser = Result<std::unique_ptr<scale::Policy>> (*)(const YAML::Node&,
                                                                const std::string&,
                                                                const CommonPolicyFields&);

struct FamilyEntry {
  std::string_view name;
  FamilyParser parse;
};

// Every family a policy file may name. Adding a family = one row here plus its parser.
constexpr std::array kFamilies = {
    FamilyEntry{"rules", &ParseRulesPolicy},
    FamilyEntry{"ratio", &ParseRatioPolicy},
    FamilyEntry{"capability", &ParseCapabilityPolicy},
    FamilyEntry{"fixed_elastic", &ParseFixedElasticPolicy},
    FamilyEntry{"target", &ParseTargetPolicy},
    FamilyEntry{"kpa", &ParseKpaPolicy},
    FamilyEntry{"slo", &ParseSloPolicy},
    FamilyEntry{"disagg", &ParseDisaggPolicy},
};

std::string FamilyNames() {
  std::string names;
  for (const FamilyEntry& f : kFamilies) {
    names += names.empty() ? std::string(f.name) : fmt::format(", {}", f.name);
  }
  return names;
}

const FamilyEntry* FindFamily(std::string_view name) {
  for (const FamilyEntry& f : kFamilies) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// The envelope's keys plus the chosen family's block; another family's block is a mistake
// worth naming (a copy-pasted file whose `family` was changed).
Status CheckEnvelopeKeys(const YAML::Node& root, std::string_view family) {
  for (const auto& entry : root) {
    GS_ASSIGN_OR_RETURN(const std::string key, yaml::KeyName(entry.first, ""));
    if (key == "family" || key == "min_replicas" || key == "max_replicas" || key == "node_plan" ||
        key == family) {
      continue;
    }
    if (FindFamily(key) != nullptr) {
      return yaml::FieldError(entry.first, key,
                              fmt::format("this block belongs to family '{}', but the file "
                                          "says family: {}",
                                          key, family));
    }
    return yaml::FieldError(
        entry.first, key,
        fmt::format("unknown field; accepted fields: family, min_replicas, max_replicas, "
                    "node_plan, {}",
                    family));
  }
  return OkStatus();
}

Result<CommonPolicyFields> ParseCommon(const YAML::Node& root) {
  CommonPolicyFields common;
  GS_ASSIGN_OR_RETURN(common.min_replicas, yaml::ReadInt(root, "min_replicas", "", 1));
  GS_ASSIGN_OR_RETURN(common.max_replicas, yaml::ReadInt(root, "max_replicas", ""));
  if (common.min_replicas < 0) {
    return yaml::FieldError(root["min_replicas"], "min_replicas", "must be >= 0");
  }
  if (common.max_replicas < common.min_replicas) {
    return yaml::FieldError(root["max_replicas"], "max_replicas",
                            fmt::format("must be >= min_replicas ({}), got {}", common.min_replicas,
                                        common.max_replicas));
  }
  return common;
}

Result<scale::NodePlanConfig> ParseNodePlan(const YAML::Node& node) {
  const std::string path = "node_plan";
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      node, path, {"gpus_per_replica", "gpus_per_node", "min_nodes", "max_nodes"}));
  scale::NodePlanConfig plan;
  GS_ASSIGN_OR_RETURN(plan.gpus_per_replica, yaml::ReadInt(node, "gpus_per_replica", path, 1));
  GS_ASSIGN_OR_RETURN(plan.gpus_per_node, yaml::ReadInt(node, "gpus_per_node", path, 8));
  GS_ASSIGN_OR_RETURN(plan.min_nodes, yaml::ReadInt(node, "min_nodes", path, 0));
  GS_ASSIGN_OR_RETURN(plan.max_nodes, yaml::ReadInt(node, "max_nodes", path));
  if (plan.gpus_per_replica < 1) {
    return yaml::FieldError(node["gpus_per_replica"], "node_plan.gpus_per_replica", "must be >= 1");
  }
  if (plan.gpus_per_node < plan.gpus_per_replica) {
    return yaml::FieldError(node["gpus_per_node"], "node_plan.gpus_per_node",
                            fmt::format("must be >= gpus_per_replica ({}) so that a replica "
                                        "fits on a node, got {}",
                                        plan.gpus_per_replica, plan.gpus_per_node));
  }
  if (plan.min_nodes < 0) {
    return yaml::FieldError(node["min_nodes"], "node_plan.min_nodes", "must be >= 0");
  }
  if (plan.max_nodes < plan.min_nodes) {
    return yaml::FieldError(
        node["max_nodes"], "node_plan.max_nodes",
        fmt::format("must be >= min_nodes ({}), got {}", plan.min_nodes, plan.max_nodes));
  }
  return plan;
}

}  // namespace

Result<PolicySpec> ParsePolicy(const YAML::Node& root) {
  if (!root.IsMap()) {
    return yaml::FieldError(root, "<root>",
                            "expected a mapping with family, min_replicas and max_replicas");
  }
  GS_ASSIGN_OR_RETURN(std::string family, yaml::ReadString(root, "family", ""));
  const FamilyEntry* entry = FindFamily(family);
  if (entry == nullptr) {
    return yaml::FieldError(
        root["family"], "family",
        fmt::format("unknown policy family '{}'; expected one of {}", family, FamilyNames()));
  }
  GS_RETURN_IF_ERROR(CheckEnvelopeKeys(root, family));
  GS_ASSIGN_OR_RETURN(CommonPolicyFields common, ParseCommon(root));
  PolicySpec spec;
  const YAML::Node plan = root["node_plan"];
  if (plan.IsDefined() && !plan.IsNull()) {
    GS_ASSIGN_OR_RETURN(spec.node_plan, ParseNodePlan(plan));
  }
  // yaml-cpp's node for a missing key throws on most calls (assignment included); family
  // parsers get a plain undefined node instead.
  const YAML::Node found = root[family];
  const YAML::Node block =
      found.IsDefined() && !found.IsNull() ? found : YAML::Node(YAML::NodeType::Undefined);
  GS_ASSIGN_OR_RETURN(spec.policy, entry->parse(block, family, common));
  return spec;
}

Result<PolicySpec> LoadPolicyFile(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  ResolveProfilePath(root, std::filesystem::path(path).parent_path().string());
  return ParsePolicy(root);
}

}  // namespace gpuscale::config
