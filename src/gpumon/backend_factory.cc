#include "gpumon/backend_factory.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "gpumon/nvidia_smi_backend.h"
#include "gpumon/nvml_backend.h"
#include "gpumon/simulated_backend.h"

namespace gpuscale::gpu {
namespace {

using BackendResult = Result<std::unique_ptr<GpuBackend>>;

std::string NvmlLibrary(const BackendOptions& options) {
  if (!options.nvml_library_path.empty()) return options.nvml_library_path;
  const char* from_env = std::getenv("GPUSCALE_NVML_LIBRARY");
  if (from_env != nullptr && *from_env != '\0') return from_env;
  return std::string(kNvmlLibrary);
}

BackendResult MakeSimulated(const BackendOptions& options) {
  if (options.inventory_path.empty()) {
    return std::unique_ptr<GpuBackend>(std::make_unique<SimulatedBackend>());
  }
  GS_ASSIGN_OR_RETURN(auto backend, SimulatedBackend::FromFile(options.inventory_path));
  return std::unique_ptr<GpuBackend>(std::move(backend));
}

BackendResult MakeNvml(const BackendOptions& options) {
  GS_ASSIGN_OR_RETURN(auto backend, NvmlBackend::Create(NvmlLibrary(options)));
  return std::unique_ptr<GpuBackend>(std::move(backend));
}

BackendResult MakeNvidiaSmi(const BackendOptions& options) {
  return std::unique_ptr<GpuBackend>(std::make_unique<NvidiaSmiBackend>(options.nvidia_smi_path));
}

// A backend counts for "auto" only when it reads at least one GPU.
Status Probe(GpuBackend& backend) {
  GS_ASSIGN_OR_RETURN(GpuSnapshot snapshot, backend.Query(Seconds{0}));
  if (snapshot.gpus.empty()) return Unavailable(fmt::format("{} lists no GPU", backend.Name()));
  return OkStatus();
}

// NVML first (fast, in-process, knows topology), then nvidia-smi.
BackendResult MakeAuto(const BackendOptions& options) {
  std::string nvml_why;
  BackendResult nvml = MakeNvml(options);
  if (nvml) {
    Status probe = Probe(**nvml);
    if (probe) return nvml;
    nvml_why = probe.error().message;
  } else {
    nvml_why = nvml.error().message;
  }
  BackendResult smi = MakeNvidiaSmi(options);
  Status probe = Probe(**smi);
  if (probe) return smi;
  return Unavailable(
      fmt::format("no GPU found (NVML: {}; nvidia-smi: {}). Install the NVIDIA driver, or use "
                  "--backend simulated [--inventory FILE] to run on a simulated inventory",
                  nvml_why, probe.error().message));
}

// Every backend's GPUs get a type and, where the config lists one, a price: one place, so
// NVML, nvidia-smi and simulated snapshots carry the same fields.
class TypedBackend final : public GpuBackend {
 public:
  TypedBackend(std::unique_ptr<GpuBackend> inner, PriceTable prices)
      : inner_(std::move(inner)), prices_(std::move(prices)) {}
  std::string_view Name() const override { return inner_->Name(); }
  Result<GpuSnapshot> Query(Seconds now) override {
    GS_ASSIGN_OR_RETURN(GpuSnapshot snapshot, inner_->Query(now));
    LabelTypesAndPrices(snapshot, prices_);
    return snapshot;
  }

 private:
  std::unique_ptr<GpuBackend> inner_;
  const PriceTable prices_;
};

BackendResult MakeUntyped(const BackendOptions& options) {
  if (options.kind == "simulated") return MakeSimulated(options);
  if (options.kind == "nvml") return MakeNvml(options);
  if (options.kind == "nvidia-smi") return MakeNvidiaSmi(options);
  if (options.kind == "auto") return MakeAuto(options);
  return InvalidArgument(
      fmt::format("unknown backend '{}'; expected auto, nvml, nvidia-smi or simulated",
                  options.kind),
      "--backend");
}

}  // namespace

Result<std::unique_ptr<GpuBackend>> MakeBackend(const BackendOptions& options) {
  GS_ASSIGN_OR_RETURN(std::unique_ptr<GpuBackend> backend, MakeUntyped(options));
  return std::unique_ptr<GpuBackend>(
      std::make_unique<TypedBackend>(std::move(backend), options.prices));
}

}  // namespace gpuscale::gpu
