// The flags every GPU-reading subcommand shares: `--backend auto|nvml|nvidia-smi|simulated`
// and `--inventory FILE` (simulated backend). They fill a gpu::BackendOptions that the
// command later hands to gpu::MakeBackend.
//
// Thread-safety: call while building the CLI; `options` must outlive parsing.
#pragma once

#include <CLI/CLI.hpp>

#include "gpumon/backend_factory.h"

namespace gpuscale::cli {

// Adds --backend (default "auto", validated: CLI11 rejects other values with exit 2),
// --inventory (implies --backend simulated when --backend is not given) and --price
// TYPE=PRICE (repeatable; fills options.prices, a malformed value exits 2).
void AddBackendFlags(CLI::App* command, gpu::BackendOptions& options);

}  // namespace gpuscale::cli
