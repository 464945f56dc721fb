#include "daemon/service_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "alloc/gpu_selector.h"
#include "daemon/service_policy.h"
#include "daemon/variant_prices.h"
#include "orch/local_process_orchestrator.h"

namespace gpuscale::daemon {
namespace {

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; };
  return name[0] != '-' && std::all_of(name.begin(), name.end(), ok);
}

Result<ServiceConfig> ValidatePools(const ServiceConfig& config, const std::string& state_dir) {
  for (int role = 0; role < 2; ++role) {
    const ServiceConfig pool = PoolServiceConfig(config, role);
    orch::LocalProcessConfig local;
    local.service = pool.name;
    local.command = pool.command;
    local.gpus_per_replica = pool.gpus_per_replica;
    local.state_dir = state_dir;
    Status valid = orch::ValidateLocalProcessConfig(local);
    Result<std::unique_ptr<scale::Policy>> policy =
        valid ? BuildServicePolicy(pool, {})
              : Result<std::unique_ptr<scale::Policy>>(Unexpected<Error>(valid.error()));
    if (!policy) {
      Error e = policy.error();
      e.field = fmt::format("disaggregated.{}.{}", kPoolRoles[role], e.field);
      return Unexpected<Error>(std::move(e));
    }
  }
  if (Result<alloc::PoolBudget> budget = MakePoolBudget(*config.disaggregated); !budget) {
    Error e = budget.error();
    e.field = "disaggregated." + e.field;
    return Unexpected<Error>(std::move(e));
  }
  return config;
}

}  // namespace

Result<ServiceConfig> ValidateService(const ServiceConfig& config,
                                      const std::vector<store::RuleRow>& rules,
                                      const std::string& state_dir) {
  if (!ValidName(config.name)) {
    return InvalidArgument(fmt::format("expected [a-z0-9][a-z0-9-]{{0,62}}, got '{}'", config.name),
                           "name");
  }
  if (config.min_replicas < 0) return InvalidArgument("must be >= 0", "min_replicas");
  if (config.max_replicas < config.min_replicas) {
    return InvalidArgument(fmt::format("must be >= min_replicas ({}), got {}", config.min_replicas,
                                       config.max_replicas),
                           "max_replicas");
  }
  if (config.max_replicas > kMaxReplicasPerService) {
    return InvalidArgument(
        fmt::format("must be <= {}, got {}", kMaxReplicasPerService, config.max_replicas),
        "max_replicas");
  }
  if (config.disaggregated) return ValidatePools(config, state_dir);
  orch::LocalProcessConfig local;
  local.service = config.name;
  local.command = config.command;
  local.gpus_per_replica = config.gpus_per_replica;
  local.state_dir = state_dir;
  GS_RETURN_IF_ERROR(orch::ValidateLocalProcessConfig(local));
  GS_ASSIGN_OR_RETURN(std::unique_ptr<scale::Policy> policy, BuildServicePolicy(config, rules));
  ServiceConfig valid = config;
  valid.policy_family = std::string(policy->Family());
  return valid;
}

Status CheckFitsInventory(const ServiceConfig& config, const Result<gpu::GpuSnapshot>& inventory) {
  if (config.disaggregated) {
    for (int role = 0; role < 2; ++role) {
      if (Status fits = CheckFitsInventory(PoolServiceConfig(config, role), inventory); !fits) {
        Error e = fits.error();
        e.field = fmt::format("disaggregated.{}.{}", kPoolRoles[role], e.field);
        return Unexpected<Error>(std::move(e));
      }
    }
    return OkStatus();
  }
  if (config.engine != "local" || config.gpus_per_replica <= 0) return OkStatus();
  if (!inventory) return OkStatus();
  // A mixed fleet's counts are in capacity, not GPUs: each variant needs its type, priced.
  if (!config.variants.empty()) {
    Result<std::vector<orch::VariantPlacement>> priced = PriceVariants(config, *inventory, "");
    if (!priced) return ResourceExhausted(priced.error().message, priced.error().field);
    return OkStatus();
  }
  const gpu::GpuSnapshot* snapshot = &*inventory;
  // A typed service fits only on GPUs of its type; "this machine's inventory" means those.
  const std::string of_type =
      config.gpu_type.empty() ? "" : fmt::format(" of type {}", config.gpu_type);
  const int64_t gpus = std::count_if(
      snapshot->gpus.begin(), snapshot->gpus.end(),
      [&](const gpu::GpuInfo& g) { return config.gpu_type.empty() || g.type == config.gpu_type; });
  if (gpus == 0) {
    return ResourceExhausted(fmt::format("this machine's inventory has no GPU{}; it has {}",
                                         of_type, alloc::CountsByType(*snapshot)),
                             "gpu_type");
  }
  if (config.gpus_per_replica > gpus) {
    return ResourceExhausted(
        fmt::format("a replica needs {} GPUs{}; this machine's inventory has {}, so it would "
                    "wait for ever",
                    config.gpus_per_replica, of_type, gpus),
        "gpus_per_replica");
  }
  const int64_t floor = static_cast<int64_t>(config.min_replicas) * config.gpus_per_replica;
  if (floor > gpus) {
    return ResourceExhausted(
        fmt::format("min_replicas {} x gpus_per_replica {} = {} GPUs{}; this machine's inventory "
                    "has {}",
                    config.min_replicas, config.gpus_per_replica, floor, of_type, gpus),
        "min_replicas");
  }
  return OkStatus();
}

}  // namespace gpuscale::daemon
