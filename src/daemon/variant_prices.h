// The variants of a mixed-fleet service (ServiceConfig::variants) as the daemon places them
// (orch::VariantPlacement): each priced from the GPUs the inventory has of its type, and the
// free GPUs of each type that sizing reads.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "alloc/lease_ledger.h"
#include "core/result.h"
#include "gpu/gpu_info.h"
#include "orch/variant_orchestrator.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

// A variant's price per replica-hour is its GPUs' count times the price per GPU-hour of the
// inventory's GPUs of its type (a spot variant's from its type's spot GPUs when the inventory
// marks some, an on-demand one's from the others; the lowest such price). Errors:
// kInvalidArgument naming `<path>.variants[i].gpu_type`: no GPU of that type in `gpus` (the
// types it has are listed), or none of them priced (gpu.prices or the inventory's prices).
Result<std::vector<orch::VariantPlacement>> PriceVariants(const ServiceConfig& service,
                                                          const gpu::GpuSnapshot& gpus,
                                                          const std::string& path);

// GPUs of each type in `gpus` that `ledger` has not leased, by type key.
std::map<std::string, int> UnleasedGpusByType(const gpu::GpuSnapshot& gpus,
                                              const alloc::LeaseLedger& ledger);

}  // namespace gpuscale::daemon
