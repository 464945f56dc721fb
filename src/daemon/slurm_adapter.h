// Builds a service's Slurm orchestrator (orch::SlurmOrchestrator with the CLI or REST
// transport) from its config (ServiceConfig::slurm) and the daemon's options. Kept apart
// from daemon_open.cc so that the mapping can be unit-tested without a daemon.
//
// Thread-safety: pure apart from reading slurm.token_file.
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "orch/slurm_orchestrator.h"
#include "orch/slurm_shared_listing.h"
#include "scale/tick_interval.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

struct SlurmAdapterOptions {
  std::string state_dir;  // logs/ and slurm/ (job scripts) go under it
  Seconds probe_interval = scale::kDefaultProbeInterval;
  Seconds restart_backoff_initial{1};
  Seconds restart_backoff_max{60};
  orch::SerialCalls::Mode calls = orch::SerialCalls::Mode::kThread;  // DaemonOptions::engine_calls
  // The daemon's: services on one cluster share its job and node listings
  // (orch/slurm_shared_listing.h). Null: each service lists for itself.
  orch::SlurmClusters* clusters = nullptr;
};

// The orchestrator's config for `service` (engine: slurm).
orch::SlurmOrchestratorConfig SlurmOrchestratorConfigFor(const ServiceConfig& service,
                                                         const SlurmAdapterOptions& options);

// The key under which services share a cluster's listings: the transport and everything its
// listings depend on (URL, user and token; or binaries, slurm.conf), and the timeout a
// listing runs under. `token` is the one read from token_file when there is one.
std::string SlurmClusterKey(const SlurmServiceConfig& slurm, const std::string& token);

// Errors: kInvalidArgument naming slurm.token_file when it cannot be read or is empty;
// those of orch::SlurmOrchestrator::Create.
Result<std::unique_ptr<orch::SlurmOrchestrator>> MakeSlurmOrchestrator(
    const ServiceConfig& service, const SlurmAdapterOptions& options);

}  // namespace gpuscale::daemon
