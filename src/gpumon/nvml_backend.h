// NvmlBackend: reads GPUs through NVML, the driver's C library, loaded at run time with
// dlopen("libnvidia-ml.so.1"). No link-time dependency and no NVML headers: the few types and
// functions used are declared in nvml_backend.cc, so the binary builds and runs on machines
// without a GPU, and the library path can point at a fake NVML in tests.
//
// Ownership: the backend owns the library handle and the NVML session (nvmlInit at Create,
// nvmlShutdown and dlclose at destruction).
// Thread-safety: one caller at a time (GpuBackend contract).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "gpu/gpu_info.h"

namespace gpuscale::gpu {

inline constexpr std::string_view kNvmlLibrary = "libnvidia-ml.so.1";

class NvmlBackend final : public GpuBackend {
 public:
  struct Api;  // resolved NVML entry points (defined in the .cc)

  // Loads `library_path` (a file name searched by the dynamic loader, or a path), resolves
  // the entry points and calls nvmlInit. Errors: kUnavailable when the library is missing
  // ("install the NVIDIA driver ...", with dlerror's text), lacks a required symbol, or
  // nvmlInit fails (message carries nvmlErrorString).
  static Result<std::unique_ptr<NvmlBackend>> Create(
      const std::string& library_path = std::string(kNvmlLibrary));

  ~NvmlBackend() override;
  NvmlBackend(const NvmlBackend&) = delete;
  NvmlBackend& operator=(const NvmlBackend&) = delete;

  std::string_view Name() const override { return "nvml"; }

  // Reads every device. A reading the device does not support (NVML_ERROR_NOT_SUPPORTED and
  // the like) is absent in GpuInfo; failing to enumerate devices is kUnavailable. Fills the
  // topology from nvmlDeviceGetTopologyCommonAncestor, upgraded to kNvLink for pairs joined
  // by an active NVLink.
  Result<GpuSnapshot> Query(Seconds now) override;

 private:
  NvmlBackend(void* library, std::unique_ptr<Api> api);

  void* library_;  // dlopen handle, owned
  std::unique_ptr<Api> api_;
};

}  // namespace gpuscale::gpu
