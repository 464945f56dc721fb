#include "cli/profile_roles.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "config/sim_config.h"
#include "profile/role_profile.h"
#include "sim/role_capacity.h"

namespace gpuscale::cli {

Result<ProfiledSimReplica> LoadProfiledSimReplica(const std::string& path) {
  auto named = [&path](Error e) {
    e.message = fmt::format("{}: {}", path, e.message);
    return Unexpected<Error>(std::move(e));
  };
  Result<sim::SimulationConfig> config = config::LoadSimConfigSections(path);
  if (!config) return named(config.error());
  Result<std::unique_ptr<sim::ReplicaModel>> model = sim::MakeReplicaModel(config->model);
  if (!model) {
    Error e = model.error();
    e.field = e.field.empty() ? "replica_model" : "replica_model." + e.field;
    return named(std::move(e));
  }
  return ProfiledSimReplica{std::move(*config), std::move(*model)};
}

Result<profile::ProfileRole> ParseProfileRoleFlag(const std::string& text) {
  if (text == "prefill") return profile::ProfileRole::kPrefill;
  if (text == "decode") return profile::ProfileRole::kDecode;
  return InvalidArgument(
      fmt::format("expected prefill or decode (leave --role out for an aggregated replica), "
                  "got '{}'",
                  text),
      "--role");
}

Result<profile::CapacityProfile> ProfileRoleFromModel(const std::string& sim_config,
                                                      profile::ProfileRole role) {
  GS_ASSIGN_OR_RETURN(ProfiledSimReplica replica, LoadProfiledSimReplica(sim_config));
  profile::CapacityProfile result;
  result.model = replica.config.model.model;
  result.source = "simulator";
  result.role = role;
  result.slo = replica.config.slo;
  result.replica_model = replica.config.model;
  // The figures come from sim/role_capacity.h's own derivation (prefill: its bisection on
  // simulated load tests; decode: the largest batch whose step meets the TPOT target).
  result.measurement = {"model", 0, 0, 1};
  const std::vector<scale::MixCapacity> capacities =
      role == profile::ProfileRole::kPrefill
          ? sim::PrefillCapacities(*replica.model, result.slo)
          : sim::DecodeCapacities(*replica.model, result.slo.tpot_seconds);
  for (const scale::MixCapacity& c : capacities) {
    const profile::Mix mix{static_cast<int32_t>(std::lround(c.prompt_tokens)),
                           static_cast<int32_t>(std::lround(c.output_tokens))};
    result.mixes.push_back(profile::RoleMix(role, mix, c.capacity_tokens_per_second));
  }
  return result;
}

Status CheckRoleEndpoint(profile::ProfileRole role) {
  if (role != profile::ProfileRole::kDecode) return OkStatus();
  // A decode replica (vLLM's kv_consumer, `gpuscale emulate --role decode`) rejects a request
  // that does not carry the KV handle a prefill replica returned, and a load that went through
  // a prefill replica first would measure the pair, not the decode replica alone.
  return InvalidArgument(
      "decode cannot be profiled through --url: a decode replica serves only requests that "
      "carry a KV handle from a prefill replica (kv_transfer_params with do_remote_prefill), "
      "which this load generator does not send; profile the decode role from the simulator "
      "(gpuscale profile --sim CONFIG --role decode), or set the decode pool's "
      "disagg.capacity_tokens_per_second from a load test of the pair",
      "--role");
}

}  // namespace gpuscale::cli
