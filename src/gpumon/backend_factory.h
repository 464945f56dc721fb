// Choosing and constructing a GpuBackend from user options (`--backend`, `--inventory`, the
// config file). `auto` tries NVML, then nvidia-smi, and otherwise fails with "no GPU found";
// the simulated backend is used only when asked for by name.
//
// Thread-safety: MakeBackend is reentrant; the returned backend is owned by the caller.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "gpu/availability_score.h"
#include "gpu/gpu_info.h"
#include "gpu/gpu_type.h"

namespace gpuscale::gpu {

struct BackendOptions {
  // "auto" (default), "nvml", "nvidia-smi" or "simulated".
  std::string kind = "auto";
  // Simulated backend only: inventory file (YAML/JSON); empty = built-in 4 x H100 80GB.
  std::string inventory_path;
  // nvidia-smi backend: program name (searched on PATH) or path. Default "nvidia-smi".
  std::string nvidia_smi_path = "nvidia-smi";
  // NVML library to dlopen; empty = $GPUSCALE_NVML_LIBRARY when set (tests point it at a
  // fake NVML), else "libnvidia-ml.so.1".
  std::string nvml_library_path;
  // Availability score weights for consumers that rank GPUs (default 0.6 / 0.4).
  ScoreWeights weights;
  // Price per GPU-hour by type key (config `gpu.prices`); a GPU whose type is not listed
  // and whose inventory entry names no price has an unknown price. Default: empty.
  PriceTable prices;

  friend bool operator==(const BackendOptions&, const BackendOptions&) = default;
};

// Builds the backend `options.kind` names. Its snapshots carry each GPU's type (from the
// product name unless an inventory gives one) and price (the inventory's, else `prices`). "auto"
// probes NVML (loads and sees >= 1 GPU), then nvidia-smi (runs and lists >= 1 GPU), and takes the
// first that works. Errors: kInvalidArgument (field "--backend") for an unknown kind; kUnavailable
// when the named backend cannot start (NVML library missing, nvidia-smi not on PATH) or, for
// "auto", "no GPU found ..." naming what was tried and suggesting `--backend simulated` or
// installing the NVIDIA driver; SimulatedBackend::FromFile's errors for a bad inventory.
Result<std::unique_ptr<GpuBackend>> MakeBackend(const BackendOptions& options);

}  // namespace gpuscale::gpu
