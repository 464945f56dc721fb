// The `disaggregated:` block of a service (daemon_config.h, DisaggSpec): two pools, prefill and
// decode, each with its own replica fields (read as a service's are: ReadReplicaFields), on
// one GPU budget whose minimums alloc::PoolBudget::Make checks.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <string_view>

#include "alloc/pool_budget.h"
#include "config/policy_config.h"
#include "scale/disagg_policy.h"
#include "serve_config/daemon_config.h"
#include "serve_config/daemon_config_internal.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {
namespace {

using yaml::FieldError;
using yaml::Join;

// The replica fields: a pool's keys, which a disaggregated service has per pool only.
constexpr std::string_view kPoolKeys[] = {
    "command",      "env",   "gpus_per_replica", "min_memory_free_mb", "min_replicas",
    "max_replicas", "policy"};

Status CheckNoServiceReplicaFields(const YAML::Node& n, const std::string& path) {
  for (std::string_view key : kPoolKeys) {
    if (!Child(n, key).IsDefined()) continue;
    return FieldError(Child(n, key), Join(path, key),
                      fmt::format("a disaggregated service has one per pool "
                                  "(disaggregated.prefill.{0} and disaggregated.decode.{0}), "
                                  "not one for the service",
                                  key));
  }
  return OkStatus();
}

// The pool's policy block, or the default one: the `disagg` family for the pool's role.
YAML::Node PoolPolicy(const YAML::Node& pool, scale::PoolRole role) {
  const YAML::Node given = Child(pool, "policy");
  if (given.IsDefined()) return given;
  YAML::Node policy(YAML::NodeType::Map);
  policy["family"] = "disagg";
  policy["disagg"]["role"] = std::string(scale::PoolRoleName(role));
  return policy;
}

Result<PoolSpec> ReadPool(const YAML::Node& block, const YAML::Node& slo_node,
                          const std::string& path, scale::PoolRole role,
                          const ServiceConfig& service) {
  const std::string pool_path = Join(path, scale::PoolRoleName(role));
  const YAML::Node n = Child(block, scale::PoolRoleName(role));
  if (!n.IsDefined()) {
    return FieldError(block, pool_path,
                      "required: the pool's command, gpus_per_replica, min_replicas, "
                      "max_replicas, ...");
  }
  if (!n.IsMap()) return FieldError(n, pool_path, "expected a mapping {command: [...], ...}");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(n, pool_path,
                                          {kPoolKeys[0], kPoolKeys[1], kPoolKeys[2], kPoolKeys[3],
                                           kPoolKeys[4], kPoolKeys[5], kPoolKeys[6]}));
  const YAML::Node policy = PoolPolicy(n, role);
  if (Status fit = config::FitDisaggRole(policy, role); !fit) {
    return Prefixed(fit.error(), Join(pool_path, "policy"));
  }
  ServiceConfig pool = service;  // its slo, for a profile's check
  GS_RETURN_IF_ERROR(ReadReplicaFields(n, policy, slo_node, pool_path, pool));
  return PoolSpec{.command = std::move(pool.command),
                  .env = std::move(pool.env),
                  .gpus_per_replica = pool.gpus_per_replica,
                  .min_memory_free_mb = pool.min_memory_free_mb,
                  .min_replicas = pool.min_replicas,
                  .max_replicas = pool.max_replicas,
                  .policy_yaml = std::move(pool.policy_yaml),
                  .policy_family = std::move(pool.policy_family)};
}

// The gateway's figures cover a request's two steps together, so each pool's policy reads
// its own replicas' histograms: a source of gateway is a mistake to name.
Status CheckDisaggServiceFields(const YAML::Node& n, const std::string& path,
                                const ServiceConfig& s) {
  GS_RETURN_IF_ERROR(CheckNoServiceReplicaFields(n, path));
  if (s.engine != "local") {
    return FieldError(Child(n, "engine"), Join(path, "engine"),
                      fmt::format("a disaggregated service runs on engine: local (its pools "
                                  "share the local lease ledger), got {}",
                                  s.engine));
  }
  if (s.slo.source == SloSource::kGateway) {
    return FieldError(Child(Child(n, "slo"), "source"), Join(path, "slo.source"),
                      "a disaggregated service's pools read their own replicas' histograms "
                      "(the gateway measures both steps together): use auto or replicas");
  }
  return OkStatus();
}

}  // namespace

Result<alloc::PoolBudget> MakePoolBudget(const DisaggSpec& spec) {
  std::vector<alloc::PoolReserve> reserves;
  for (int role = 0; role < 2; ++role) {
    const PoolSpec& pool = role == 0 ? spec.prefill : spec.decode;
    reserves.push_back({kPoolRoles[role], pool.min_replicas * pool.gpus_per_replica});
  }
  return alloc::PoolBudget::Make(spec.gpu_budget, std::move(reserves));
}

ServiceConfig PoolServiceConfig(const ServiceConfig& service, int role) {
  const PoolSpec& pool = role == 0 ? service.disaggregated->prefill : service.disaggregated->decode;
  ServiceConfig c = service;
  c.disaggregated.reset();
  c.name = fmt::format("{}.{}", service.name, kPoolRoles[role]);
  c.command = pool.command;
  c.env = pool.env;
  c.gpus_per_replica = pool.gpus_per_replica;
  c.min_memory_free_mb = pool.min_memory_free_mb;
  c.min_replicas = pool.min_replicas;
  c.max_replicas = pool.max_replicas;
  c.policy_yaml = pool.policy_yaml;
  c.policy_family = pool.policy_family;
  c.slo.source = SloSource::kReplicas;
  return c;
}

Status ReadDisaggregated(const YAML::Node& n, const std::string& path, ServiceConfig& s) {
  const std::string d_path = Join(path, "disaggregated");
  const YAML::Node d = Child(n, "disaggregated");
  GS_RETURN_IF_ERROR(CheckDisaggServiceFields(n, path, s));
  if (!d.IsMap()) {
    return FieldError(d, d_path,
                      "expected a mapping {gpu_budget: N, prefill: {command: [...], ...}, "
                      "decode: {...}}");
  }
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(d, d_path, {"gpu_budget", "prefill", "decode"}));
  DisaggSpec spec;
  if (!Child(d, "gpu_budget").IsDefined()) {
    return FieldError(d, Join(d_path, "gpu_budget"),
                      "required: the GPUs both pools may hold together, e.g. 8");
  }
  GS_ASSIGN_OR_RETURN(spec.gpu_budget, ReadIntAtLeast(d, "gpu_budget", d_path, 0, 1));
  const YAML::Node slo = Child(n, "slo");
  GS_ASSIGN_OR_RETURN(spec.prefill, ReadPool(d, slo, d_path, scale::PoolRole::kPrefill, s));
  GS_ASSIGN_OR_RETURN(spec.decode, ReadPool(d, slo, d_path, scale::PoolRole::kDecode, s));
  if (Result<alloc::PoolBudget> budget = MakePoolBudget(spec); !budget) {
    return FieldError(Child(d, "gpu_budget"), Join(d_path, budget.error().field),
                      budget.error().message);
  }
  s.command.clear();
  s.env.clear();
  s.gpus_per_replica = 0;
  s.min_memory_free_mb = 0;
  s.min_replicas = spec.prefill.min_replicas + spec.decode.min_replicas;
  s.max_replicas = spec.prefill.max_replicas + spec.decode.max_replicas;
  s.policy_yaml.clear();
  s.policy_family = spec.prefill.policy_family == spec.decode.policy_family
                        ? spec.prefill.policy_family
                        : spec.prefill.policy_family + "/" + spec.decode.policy_family;
  s.disaggregated = std::move(spec);
  return OkStatus();
}

void EmitDisaggregated(YAML::Emitter& out, const DisaggSpec& spec) {
  out << YAML::Key << "disaggregated" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gpu_budget" << YAML::Value << spec.gpu_budget;
  for (int role = 0; role < 2; ++role) {
    out << YAML::Key << kPoolRoles[role] << YAML::Value << YAML::BeginMap;
    EmitPoolFields(out, role == 0 ? spec.prefill : spec.decode);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace gpuscale::daemon
