// The parts of `gpuscale profile` (profile_commands.cc) shared by its aggregated and its role
// modes (--role prefill|decode: one pool's replica of a disaggregated service,
// profile/role_profile.h): the simulated replica a --sim config describes, and the role
// mode's own sources.
//  - --sim with --role: the capacities sim/role_capacity.h computes from the calibrated
//    replica model at the config's SLO (the same figures `gpuscale simulate` gives a disagg
//    pool without a profile), so a role profile and the simulator agree by construction;
//  - --url with --role prefill: the endpoint steps of the aggregated mode on 1-token
//    completions (profile_commands.cc), each mix's capacity then in prompt tokens/s;
//  - --url with --role decode: refused (CheckRoleEndpoint says why).
// Thread-safety: free functions.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "profile/capacity_profile.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"

namespace gpuscale::cli {

// The sim config's sections and the replica model they describe.
struct ProfiledSimReplica {
  sim::SimulationConfig config;
  std::unique_ptr<sim::ReplicaModel> model;
};

// Errors: the config's and the model's, the message prefixed with `path`.
Result<ProfiledSimReplica> LoadProfiledSimReplica(const std::string& path);

// --role's value: prefill or decode. Errors: kInvalidArgument naming --role.
Result<profile::ProfileRole> ParseProfileRoleFlag(const std::string& text);

// The role profile of the replica `sim_config` describes (no curves: measurement method
// "model"). REQUIRES: role is not kAggregated. Errors: LoadProfiledSimReplica's.
Result<profile::CapacityProfile> ProfileRoleFromModel(const std::string& sim_config,
                                                      profile::ProfileRole role);

// Whether a live replica of `role` can be profiled through --url. Errors: kInvalidArgument
// naming --role for decode, saying why and what to run instead.
Status CheckRoleEndpoint(profile::ProfileRole role);

}  // namespace gpuscale::cli
