// A service's spec policy (spec_policy.h).
#include "serve_config/spec_policy.h"

#include <yaml-cpp/yaml.h>

#include <utility>

#include "config/policy_config.h"
#include "scale/rules_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {

Result<std::unique_ptr<scale::Policy>> SpecPolicy(const ServiceConfig& service) {
  if (service.policy_yaml.empty()) {
    scale::RulesPolicyConfig config;
    config.min_replicas = service.min_replicas;
    config.max_replicas = service.max_replicas;
    return std::unique_ptr<scale::Policy>(std::make_unique<scale::RulesPolicy>(std::move(config)));
  }
  GS_ASSIGN_OR_RETURN(YAML::Node root,
                      yaml::ParseYaml(service.policy_yaml, service.name + " policy"));
  if (!root.IsMap()) return InvalidArgument("expected a mapping with `family`", "policy");
  // The service's bounds are the policy's bounds (daemon_config.h).
  root["min_replicas"] = service.min_replicas;
  root["max_replicas"] = service.max_replicas;
  Result<config::PolicySpec> spec = config::ParsePolicy(root);
  if (!spec) {
    Error e = spec.error();
    e.field = yaml::Join("policy", e.field);
    return Unexpected<Error>(std::move(e));
  }
  return std::move(spec->policy);
}

}  // namespace gpuscale::daemon
