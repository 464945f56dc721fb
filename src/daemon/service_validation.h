// Checks of a service spec an API request (or a reload) asks for, before it is stored: its
// name and bounds, its command and policy (or each pool's, for a disaggregated service), and
// whether this machine's GPU inventory could ever hold it. Pure: the inventory is a
// parameter.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "gpu/gpu_info.h"
#include "serve_config/daemon_config.h"
#include "store/store.h"

namespace gpuscale::daemon {

// `config` as it will be stored, with its policy_family filled in (the policy built from the
// spec, or from `rules` when the spec has no `policy` block). `state_dir`: the daemon's (a
// local command is validated as its orchestrator will run it). Errors: kInvalidArgument naming
// the field (name, min_replicas, max_replicas, command, policy..., disaggregated.<role>.<field>).
Result<ServiceConfig> ValidateService(const ServiceConfig& config,
                                      const std::vector<store::RuleRow>& rules,
                                      const std::string& state_dir);

// kResourceExhausted (HTTP 409) naming gpu_type, gpus_per_replica or min_replicas (under
// disaggregated.<role> for a pool) when a local service's replica, or its min_replicas, needs
// more GPUs than `inventory` has: it would wait for ever. No check when the GPU backend cannot
// answer (`inventory` an error: the allocator's pending reason says more then).
Status CheckFitsInventory(const ServiceConfig& config, const Result<gpu::GpuSnapshot>& inventory);

}  // namespace gpuscale::daemon
