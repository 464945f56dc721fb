#include "config/sim_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <tuple>
#include <utility>

#include "config/admission_config.h"
#include "config/policy_profile.h"
#include "config/router_config.h"
#include "config/sim_variant_config.h"
#include "sim/disagg.h"
#include "sim/role_capacity.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using yaml::CheckKnownKeys;
using yaml::FieldError;
using yaml::Join;
using yaml::ReadDouble;
using yaml::ReadInt;
using yaml::ReadString;

Status CheckMap(const YAML::Node& node, std::string_view path) {
  if (node && !node.IsMap()) return FieldError(node, path, "expected a mapping");
  return OkStatus();
}

Status ParseCluster(const YAML::Node& n, sim::ClusterSpec& c) {
  GS_RETURN_IF_ERROR(CheckMap(n, "cluster"));
  if (!n) return OkStatus();
  GS_RETURN_IF_ERROR(
      CheckKnownKeys(n, "cluster", {"nodes", "gpus_per_node", "gpu_type", "gpu_memory_mb"}));
  GS_ASSIGN_OR_RETURN(c.nodes, ReadInt(n, "nodes", "cluster", c.nodes));
  GS_ASSIGN_OR_RETURN(c.gpus_per_node, ReadInt(n, "gpus_per_node", "cluster", c.gpus_per_node));
  GS_ASSIGN_OR_RETURN(c.gpu_type, ReadString(n, "gpu_type", "cluster", c.gpu_type));
  GS_ASSIGN_OR_RETURN(int memory, ReadInt(n, "gpu_memory_mb", "cluster",
                                          static_cast<int>(c.gpu_memory_mb)));
  c.gpu_memory_mb = memory;
  if (c.nodes < 1) return FieldError(n["nodes"], "cluster.nodes", "must be >= 1");
  if (c.gpus_per_node < 1) {
    return FieldError(n["gpus_per_node"], "cluster.gpus_per_node", "must be >= 1");
  }
  return OkStatus();
}

// The replica fields a service and each pool of a disaggregated one share, under `path`.
Status ParseReplicaFields(const YAML::Node& n, const std::string& path, sim::ServiceSpec& s) {
  GS_ASSIGN_OR_RETURN(s.gpus_per_replica, ReadInt(n, "gpus_per_replica", path, s.gpus_per_replica));
  GS_ASSIGN_OR_RETURN(s.min_replicas, ReadInt(n, "min_replicas", path, s.min_replicas));
  GS_ASSIGN_OR_RETURN(s.max_replicas, ReadInt(n, "max_replicas", path, s.max_replicas));
  // `auto`: sized from the trace's first minutes before the run (sim::WarmStartReplicas).
  if (const YAML::Node v = n["initial_replicas"]; v.IsDefined() && v.IsScalar() && v.Scalar() == "auto") {
    s.initial_replicas = sim::ServiceSpec::kAutoInitialReplicas;
  } else {
    GS_ASSIGN_OR_RETURN(s.initial_replicas,
                        ReadInt(n, "initial_replicas", path, s.initial_replicas));
  }
  GS_ASSIGN_OR_RETURN(double cold, ReadDouble(n, "cold_start_seconds", path, s.cold_start.count()));
  GS_ASSIGN_OR_RETURN(double drain,
                      ReadDouble(n, "drain_timeout_seconds", path, s.drain_timeout.count()));
  s.cold_start = Seconds{cold};
  s.drain_timeout = Seconds{drain};
  if (s.gpus_per_replica < 1) {
    return FieldError(n["gpus_per_replica"], Join(path, "gpus_per_replica"), "must be >= 1");
  }
  if (s.min_replicas < 0)
    return FieldError(n["min_replicas"], Join(path, "min_replicas"), "must be >= 0");
  if (s.max_replicas < s.min_replicas) {
    return FieldError(n["max_replicas"], Join(path, "max_replicas"), "must be >= min_replicas");
  }
  if (cold < 0)
    return FieldError(n["cold_start_seconds"], Join(path, "cold_start_seconds"), "must be >= 0");
  if (drain < 0) {
    return FieldError(n["drain_timeout_seconds"], Join(path, "drain_timeout_seconds"),
                      "must be >= 0");
  }
  return OkStatus();
}

Status ParseService(const YAML::Node& n, sim::SimulationConfig& c) {
  GS_RETURN_IF_ERROR(CheckMap(n, "service"));
  if (!n) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(
      n, "service",
      {"name", "model", "gpus_per_replica", "min_replicas", "max_replicas", "initial_replicas",
       "cold_start_seconds", "drain_timeout_seconds", "variants", "gpu_limits", "budget_per_hour",
       "on_demand_base_ratio", "long_prompt_ttft_share"}));
  auto& s = c.service;
  GS_ASSIGN_OR_RETURN(s.name, ReadString(n, "name", "service", s.name));
  GS_ASSIGN_OR_RETURN(c.model.model, ReadString(n, "model", "service", c.model.model));
  GS_RETURN_IF_ERROR(ParseReplicaFields(n, "service", s));
  GS_RETURN_IF_ERROR(ParseVariants(n, s));
  c.model.tensor_parallel = s.gpus_per_replica;
  return OkStatus();
}

Status ParseModel(const YAML::Node& n, sim::ReplicaModelConfig& m) {
  GS_RETURN_IF_ERROR(CheckMap(n, "replica_model"));
  if (!n) return OkStatus();
  const char* p = "replica_model";
  GS_RETURN_IF_ERROR(CheckKnownKeys(n, p, {"gpu", "max_batch_size", "kv_cache_tokens",
                                           "max_batched_tokens", "model"}));
  GS_ASSIGN_OR_RETURN(m.model, ReadString(n, "model", p, m.model));
  GS_ASSIGN_OR_RETURN(m.gpu, ReadString(n, "gpu", p, m.gpu));
  GS_ASSIGN_OR_RETURN(m.max_batch_size, ReadInt(n, "max_batch_size", p, m.max_batch_size));
  GS_ASSIGN_OR_RETURN(double kv, ReadDouble(n, "kv_cache_tokens", p, 0.0));
  GS_ASSIGN_OR_RETURN(m.max_batched_tokens,
                      ReadInt(n, "max_batched_tokens", p, m.max_batched_tokens));
  if (m.max_batch_size < 1) return FieldError(n["max_batch_size"], Join(p, "max_batch_size"), "must be >= 1");
  // Checked before the cast: a double past int64's range (or NaN) converts to nothing defined.
  if (!(kv >= 0 && kv <= sim::kMaxKvCacheTokens)) {
    return FieldError(n["kv_cache_tokens"], Join(p, "kv_cache_tokens"),
                      fmt::format("must be a number in [0, {}]", sim::kMaxKvCacheTokens));
  }
  m.kv_cache_tokens = static_cast<int64_t>(kv);
  if (m.max_batched_tokens < 1) {
    return FieldError(n["max_batched_tokens"], Join(p, "max_batched_tokens"), "must be >= 1");
  }
  return OkStatus();
}

Status ParseSlo(const YAML::Node& n, sim::SloSpec& s) {
  GS_RETURN_IF_ERROR(CheckMap(n, "slo"));
  if (!n) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(n, "slo", {"ttft_seconds", "tpot_seconds", "target_ratio"}));
  GS_ASSIGN_OR_RETURN(s.ttft_seconds, ReadDouble(n, "ttft_seconds", "slo", s.ttft_seconds));
  GS_ASSIGN_OR_RETURN(s.tpot_seconds, ReadDouble(n, "tpot_seconds", "slo", s.tpot_seconds));
  GS_ASSIGN_OR_RETURN(s.target_ratio, ReadDouble(n, "target_ratio", "slo", s.target_ratio));
  if (!(s.ttft_seconds > 0)) return FieldError(n["ttft_seconds"], "slo.ttft_seconds", "must be > 0");
  if (!(s.tpot_seconds > 0)) return FieldError(n["tpot_seconds"], "slo.tpot_seconds", "must be > 0");
  if (!(s.target_ratio > 0 && s.target_ratio <= 1)) {
    return FieldError(n["target_ratio"], "slo.target_ratio", "must be in (0, 1]");
  }
  return OkStatus();
}

Status ParseFaults(const YAML::Node& n, sim::FaultSpec& f) {
  GS_RETURN_IF_ERROR(CheckMap(n, "faults"));
  if (!n) return OkStatus();
  GS_RETURN_IF_ERROR(
      CheckKnownKeys(n, "faults", {"crash_at_seconds", "metrics_outages", "preemption_seed"}));
  GS_ASSIGN_OR_RETURN(int seed, ReadInt(n, "preemption_seed", "faults", 1));
  if (seed < 0) return FieldError(n["preemption_seed"], "faults.preemption_seed", "must be >= 0");
  f.preemption_seed = static_cast<uint64_t>(seed);
  if (const auto& crashes = n["crash_at_seconds"]) {
    if (!crashes.IsSequence()) return FieldError(crashes, "faults.crash_at_seconds", "expected a list of numbers");
    for (size_t i = 0; i < crashes.size(); ++i) {
      YAML::Node holder;
      holder["t"] = crashes[i];
      GS_ASSIGN_OR_RETURN(double t, ReadDouble(holder, "t", yaml::Index("faults.crash_at_seconds", i)));
      f.crash_at_seconds.push_back(t);
    }
  }
  if (const auto& outages = n["metrics_outages"]) {
    if (!outages.IsSequence()) return FieldError(outages, "faults.metrics_outages", "expected a list");
    for (size_t i = 0; i < outages.size(); ++i) {
      std::string path = yaml::Index("faults.metrics_outages", i);
      GS_RETURN_IF_ERROR(CheckKnownKeys(outages[i], path, {"from_seconds", "to_seconds"}));
      GS_ASSIGN_OR_RETURN(double from, ReadDouble(outages[i], "from_seconds", path));
      GS_ASSIGN_OR_RETURN(double to, ReadDouble(outages[i], "to_seconds", path));
      if (to < from) return FieldError(outages[i]["to_seconds"], Join(path, "to_seconds"), "must be >= from_seconds");
      f.metrics_outages.emplace_back(from, to);
    }
  }
  return OkStatus();
}

// The shared `router:` block (config/router_config.h), defaulting to no slow start. Prefix
// affinity and prefix_cache routing key on the trace's block hashes (Mooncake's hash_ids);
// on a trace without them they route as least outstanding does.
Status ParseRouter(const YAML::Node& n, route::PickerSpec& router) {
  GS_ASSIGN_OR_RETURN(router, ParseRouterConfig(n, "router", router));
  return OkStatus();
}

// The shared `admission:` block (config/admission_config.h): present, the service's door
// admits through route::AdmissionQueue as the gateway's does.
Status ParseAdmission(const YAML::Node& n, sim::SimulationConfig& c) {
  if (!n.IsDefined()) return OkStatus();
  if (c.disaggregated) {
    return FieldError(n, "admission", "a disaggregated service has no simulated admission yet");
  }
  route::AdmissionConfig admission;
  GS_RETURN_IF_ERROR(ParseAdmissionConfig(n, "admission", AdmissionDoor::kSimulator, admission));
  c.admission = std::move(admission);
  return OkStatus();
}

// Copies service bounds into the envelope, or checks that the envelope agrees.
Status MergeBounds(YAML::Node policy, const sim::ServiceSpec& service,
                   const std::string& path = "policy",
                   const std::string& service_path = "service") {
  for (auto [key, value] : {std::pair<const char*, int>{"min_replicas", service.min_replicas},
                            {"max_replicas", service.max_replicas}}) {
    if (!policy[key]) {
      policy[key] = value;
      continue;
    }
    GS_ASSIGN_OR_RETURN(int given, ReadInt(policy, key, path));
    if (given != value) {
      return FieldError(policy[key], Join(path, key),
                        fmt::format("{} differs from {}.{} = {}; set it in one place", given,
                                    service_path, key, value));
    }
  }
  return OkStatus();
}

// One pool of `disaggregated:`; its replica fields default to the service's.
Status ParsePool(const YAML::Node& n, const std::string& path, const sim::ServiceSpec& service,
                 sim::ServiceSpec& pool) {
  if (!n.IsDefined()) return InvalidArgument("required field is missing", path);
  GS_RETURN_IF_ERROR(CheckMap(n, path));
  GS_RETURN_IF_ERROR(
      CheckKnownKeys(n, path,
                     {"gpus_per_replica", "min_replicas", "max_replicas", "initial_replicas",
                      "cold_start_seconds", "drain_timeout_seconds", "policy"}));
  const std::string role = path.substr(path.rfind('.') + 1);
  pool = service;
  pool.name = service.name + "-" + role;
  GS_RETURN_IF_ERROR(ParseReplicaFields(n, path, pool));
  if (pool.initial_replicas == sim::ServiceSpec::kAutoInitialReplicas) {
    return FieldError(n["initial_replicas"], Join(path, "initial_replicas"),
                      "'auto' is not supported for a pool; give a number");
  }
  return OkStatus();
}

// `disaggregated: {gpu_budget, link, prefill: {...}, decode: {...}}` (sim/disagg.h).
Status ParseDisaggregated(const YAML::Node& n, sim::SimulationConfig& c) {
  const std::string p = "disaggregated";
  GS_RETURN_IF_ERROR(CheckMap(n, p));
  if (!n) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(n, p, {"gpu_budget", "link", "prefill", "decode"}));
  sim::DisaggSpec d;
  GS_ASSIGN_OR_RETURN(d.gpu_budget, ReadInt(n, "gpu_budget", p, 0));
  if (d.gpu_budget < 0) return FieldError(n["gpu_budget"], Join(p, "gpu_budget"), "must be >= 0");
  GS_ASSIGN_OR_RETURN(std::string link, ReadString(n, "link", p, d.link.name));
  auto parsed = sim::ParseLink(link, c.model.gpu);
  if (!parsed)
    return FieldError(n["link"].IsDefined() ? n["link"] : n, Join(p, "link"),
                      parsed.error().message);
  d.link = *parsed;
  GS_RETURN_IF_ERROR(ParsePool(n["prefill"], Join(p, "prefill"), c.service, d.prefill));
  GS_RETURN_IF_ERROR(ParsePool(n["decode"], Join(p, "decode"), c.service, d.decode));
  c.disaggregated = d;
  return OkStatus();
}

// Each pool's policy envelope, with the pool's bounds merged in (as MergeBounds does for the
// service); a top-level `policy` would be ambiguous.
Status ParsePoolPolicies(const YAML::Node& root, SimConfigFile& file) {
  if (root["policy"]) {
    return FieldError(root["policy"], "policy",
                      "a disaggregated service has one policy per pool: "
                      "disaggregated.prefill.policy and disaggregated.decode.policy");
  }
  const auto& d = *file.sim.disaggregated;
  for (auto [role, spec, out] : {std::tuple{"prefill", &d.prefill, &file.prefill_policy},
                                 std::tuple{"decode", &d.decode, &file.decode_policy}}) {
    const std::string pool_path = Join("disaggregated", role);
    const std::string path = Join(pool_path, "policy");
    const YAML::Node policy = root["disaggregated"][role]["policy"];
    if (!policy) return InvalidArgument("required field is missing", path);
    if (!policy.IsMap()) return FieldError(policy, path, "expected a mapping");
    *out = policy;
    GS_RETURN_IF_ERROR(MergeBounds(*out, *spec, path, pool_path));
    // A pool's role profile answers to the service's SLO too (its role's targets).
    const sim::SloSpec& slo = file.sim.slo;
    GS_RETURN_IF_ERROR(CheckProfileSlo(*out, path, slo.ttft_seconds, slo.tpot_seconds,
                                       slo.target_ratio, root["slo"], "slo"));
  }
  return OkStatus();
}

// Every section but `policy`.
Status ParseSections(const YAML::Node& root, sim::SimulationConfig& c) {
  if (!root || !root.IsMap()) return InvalidArgument("expected a mapping at the top level", "config");
  GS_RETURN_IF_ERROR(
      CheckKnownKeys(root, "",
                     {"cluster", "service", "replica_model", "router", "control_interval_seconds",
                      "scrape_interval_seconds", "slo", "oracle_bucket_seconds", "faults", "policy",
                      "disaggregated", "admission"}));
  GS_RETURN_IF_ERROR(ParseCluster(root["cluster"], c.cluster));
  GS_RETURN_IF_ERROR(ParseService(root["service"], c));
  GS_RETURN_IF_ERROR(ParseModel(root["replica_model"], c.model));
  GS_RETURN_IF_ERROR(ParseSlo(root["slo"], c.slo));
  GS_RETURN_IF_ERROR(ParseFaults(root["faults"], c.faults));
  GS_RETURN_IF_ERROR(ParseRouter(root["router"], c.router));
  GS_RETURN_IF_ERROR(ParseDisaggregated(root["disaggregated"], c));
  GS_RETURN_IF_ERROR(ParseAdmission(root["admission"], c));
  for (auto [key, target] : {std::pair<const char*, Seconds*>{"control_interval_seconds", &c.control_interval},
                             {"scrape_interval_seconds", &c.scrape_interval},
                             {"oracle_bucket_seconds", &c.oracle_bucket}}) {
    GS_ASSIGN_OR_RETURN(double v, ReadDouble(root, key, "", target->count()));
    if (!(v > 0)) return FieldError(root[key], key, "must be > 0");
    *target = Seconds{v};
  }
  return OkStatus();
}

}  // namespace

Result<SimConfigFile> ParseSimConfig(const YAML::Node& root) {
  SimConfigFile file;
  auto& c = file.sim;
  GS_RETURN_IF_ERROR(ParseSections(root, c));
  if (c.disaggregated) {
    GS_RETURN_IF_ERROR(ParsePoolPolicies(root, file));
    GS_RETURN_IF_ERROR(sim::ValidateDisaggConfig(c));
    return file;
  }
  if (!root["policy"]) return InvalidArgument("required field is missing", "policy");
  if (!root["policy"].IsMap()) return FieldError(root["policy"], "policy", "expected a mapping");
  // A handle, not a clone: YAML::Clone drops line marks, and errors must name lines. Filling
  // in the bounds therefore also edits the caller's tree.
  file.policy = root["policy"];
  GS_RETURN_IF_ERROR(MergeBounds(file.policy, c.service));
  // A profile measured at another SLO gives a capacity the simulation's SLO does not hold at.
  GS_RETURN_IF_ERROR(CheckProfileSlo(file.policy, "policy", c.slo.ttft_seconds, c.slo.tpot_seconds,
                                     c.slo.target_ratio, root["slo"], "slo"));
  GS_RETURN_IF_ERROR(sim::ValidateSimulationConfig(c));
  return file;
}

Result<sim::SimulationConfig> LoadSimConfigSections(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  sim::SimulationConfig c;
  GS_RETURN_IF_ERROR(ParseSections(root, c));
  GS_RETURN_IF_ERROR(sim::ValidateSimulationConfig(c));
  return c;
}

Result<SimConfigFile> LoadSimConfigFile(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  // Before parsing: MakeSimPolicy parses the policy again for every run, from the tree alone.
  if (root.IsMap()) {
    const std::string base_dir = std::filesystem::path(path).parent_path().string();
    // The const operator[]: the other one adds a `policy` key to a file that has none.
    const YAML::Node& tree = std::as_const(root);
    ResolveProfilePath(tree["policy"], base_dir);
    // IsMap before each lookup: a lookup in a missing node's child throws.
    if (const YAML::Node d = tree["disaggregated"]; d.IsDefined() && d.IsMap()) {
      for (const char* pool : {"prefill", "decode"}) {
        if (const YAML::Node p = d[pool]; p.IsDefined() && p.IsMap()) {
          ResolveProfilePath(p["policy"], base_dir);
        }
      }
    }
  }
  return ParseSimConfig(root);
}

Result<PolicySpec> MakeSimPolicy(const SimConfigFile& file) {
  auto spec = ParsePolicy(file.policy);
  if (!spec) {
    Error e = spec.error();
    e.field = e.field.empty() ? "policy" : Join("policy", e.field);
    return Unexpected<Error>(e);
  }
  return spec;
}

Result<PolicySpec> MakeDisaggPoolPolicy(const SimConfigFile& file, scale::PoolRole role,
                                        const sim::ReplicaModel& model) {
  const bool prefill = role == scale::PoolRole::kPrefill;
  const YAML::Node& envelope = prefill ? file.prefill_policy : file.decode_policy;
  const std::string path = Join(Join("disaggregated", scale::PoolRoleName(role)), "policy");
  auto prefixed = [&](Error e) {
    e.field = e.field.empty() ? path : Join(path, e.field);
    return Unexpected<Error>(std::move(e));
  };
  if (auto fit = FitDisaggRole(envelope, role); !fit) return prefixed(fit.error());
  const YAML::Node block = envelope["disagg"];
  // Neither a capacity nor a profile named: the replica model's own figures.
  const bool profile_from_model =
      envelope["family"].IsDefined() && envelope["family"].Scalar() == "disagg" &&
      block.IsDefined() && block.IsMap() && !block["capacity_tokens_per_second"].IsDefined() &&
      !block["profile"].IsDefined();
  if (!profile_from_model) {
    auto spec = ParsePolicy(envelope);
    if (!spec) return prefixed(spec.error());
    return spec;
  }
  if (auto known =
          CheckKnownKeys(envelope, "", {"family", "min_replicas", "max_replicas", "disagg"});
      !known) {
    return prefixed(known.error());
  }
  const sim::ServiceSpec& pool =
      prefill ? file.sim.disaggregated->prefill : file.sim.disaggregated->decode;
  auto c = ParseDisaggPolicyConfig(block, "disagg", {pool.min_replicas, pool.max_replicas});
  if (!c) return prefixed(c.error());
  c->mix_capacities = prefill ? sim::PrefillCapacities(model, file.sim.slo)
                              : sim::DecodeCapacities(model, file.sim.slo.tpot_seconds);
  c->capacity_tokens_per_second = c->mix_capacities.front().capacity_tokens_per_second;
  PolicySpec spec;
  spec.policy = std::make_unique<scale::DisaggPolicy>(std::move(*c));
  return spec;
}

}  // namespace gpuscale::config
