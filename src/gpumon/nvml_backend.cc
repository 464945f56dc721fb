#include "gpumon/nvml_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <climits>
#include <utility>
#include <vector>

namespace gpuscale::gpu {
namespace {

// The subset of nvml.h we use, declared here so that no NVML header or library is needed at
// build time. Layouts and values follow NVIDIA's NVML API reference (stable C ABI).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
constexpr int kNvmlTemperatureGpu = 0;
constexpr unsigned kNvmlNvLinkMaxLinks = 18;
constexpr unsigned long long kNvmlValueNotAvailable = ULLONG_MAX;
constexpr unsigned kNvmlStringSize = 96;  // >= NVML_DEVICE_NAME_V2_BUFFER_SIZE and UUID size

struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;  // percent of time a kernel ran over the last sample period
  unsigned int memory;
};
struct nvmlProcessInfo_v2_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or kNvmlValueNotAvailable
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

template <typename Fn>
bool Resolve(void* library, const char* name, Fn*& fn) {
  fn = reinterpret_cast<Fn*>(dlsym(library, name));
  return fn != nullptr;
}

constexpr int64_t BytesToMb(unsigned long long bytes) {
  return static_cast<int64_t>(bytes / (1024ull * 1024ull));
}

}  // namespace

// Entry points; the optional ones may be null on old drivers and then read as absent.
struct NvmlBackend::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*device_count)(unsigned*);
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  // Optional:
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_mw)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v2_t*) = nullptr;
  nvmlReturn_t (*common_ancestor)(nvmlDevice_t, nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;

  std::string Describe(nvmlReturn_t rc) const {
    const char* text = error_string ? error_string(rc) : nullptr;
    return text ? fmt::format("{} (NVML error {})", text, rc) : fmt::format("NVML error {}", rc);
  }
};

namespace {

// Fills `api`; returns the first missing required symbol's name, or nullptr.
const char* ResolveApi(void* lib, NvmlBackend::Api& api) {
  if (!Resolve(lib, "nvmlInit_v2", api.init)) return "nvmlInit_v2";
  if (!Resolve(lib, "nvmlShutdown", api.shutdown)) return "nvmlShutdown";
  if (!Resolve(lib, "nvmlErrorString", api.error_string)) return "nvmlErrorString";
  if (!Resolve(lib, "nvmlDeviceGetCount_v2", api.device_count)) return "nvmlDeviceGetCount_v2";
  if (!Resolve(lib, "nvmlDeviceGetHandleByIndex_v2", api.handle_by_index)) {
    return "nvmlDeviceGetHandleByIndex_v2";
  }
  if (!Resolve(lib, "nvmlDeviceGetName", api.name)) return "nvmlDeviceGetName";
  if (!Resolve(lib, "nvmlDeviceGetUUID", api.uuid)) return "nvmlDeviceGetUUID";
  if (!Resolve(lib, "nvmlDeviceGetMemoryInfo", api.memory)) return "nvmlDeviceGetMemoryInfo";
  Resolve(lib, "nvmlDeviceGetUtilizationRates", api.utilization);
  Resolve(lib, "nvmlDeviceGetTemperature", api.temperature);
  Resolve(lib, "nvmlDeviceGetPowerUsage", api.power_mw);
  Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v2", api.processes);
  Resolve(lib, "nvmlDeviceGetTopologyCommonAncestor", api.common_ancestor);
  Resolve(lib, "nvmlDeviceGetNvLinkState", api.nvlink_state);
  Resolve(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.nvlink_remote_pci);
  Resolve(lib, "nvmlDeviceGetPciInfo_v3", api.pci_info);
  return nullptr;
}

void ReadSensors(const NvmlBackend::Api& api, nvmlDevice_t device, GpuInfo& gpu) {
  nvmlUtilization_t utilization{};
  if (api.utilization && api.utilization(device, &utilization) == kNvmlSuccess) {
    gpu.utilization_percent = static_cast<double>(utilization.gpu);
  }
  unsigned value = 0;
  if (api.temperature && api.temperature(device, kNvmlTemperatureGpu, &value) == kNvmlSuccess) {
    gpu.temperature_c = static_cast<double>(value);
  }
  if (api.power_mw && api.power_mw(device, &value) == kNvmlSuccess) {
    gpu.power_draw_w = value / 1000.0;
  }
}

void ReadProcesses(const NvmlBackend::Api& api, nvmlDevice_t device, GpuInfo& gpu) {
  if (!api.processes) return;
  std::vector<nvmlProcessInfo_v2_t> infos(64);
  unsigned count = static_cast<unsigned>(infos.size());
  nvmlReturn_t rc = api.processes(device, &count, infos.data());
  if (rc == kNvmlErrorInsufficientSize) {  // `count` now holds what is needed
    infos.resize(count + 16);
    count = static_cast<unsigned>(infos.size());
    rc = api.processes(device, &count, infos.data());
  }
  if (rc != kNvmlSuccess) return;
  for (unsigned i = 0; i < count && i < infos.size(); ++i) {
    GpuProcess process;
    process.pid = static_cast<int>(infos[i].pid);
    if (infos[i].usedGpuMemory != kNvmlValueNotAvailable) {
      process.used_memory_mb = BytesToMb(infos[i].usedGpuMemory);
    }
    gpu.processes.push_back(std::move(process));
  }
}

Result<GpuInfo> ReadDevice(const NvmlBackend::Api& api, unsigned index, nvmlDevice_t device) {
  GpuInfo gpu;
  gpu.index = static_cast<int>(index);
  std::array<char, kNvmlStringSize> text{};
  if (api.name(device, text.data(), text.size()) == kNvmlSuccess) gpu.name = text.data();
  text.fill('\0');
  nvmlReturn_t rc = api.uuid(device, text.data(), text.size());
  if (rc != kNvmlSuccess) {
    return Unavailable(
        fmt::format("NVML: cannot read the uuid of GPU {}: {}", index, api.Describe(rc)));
  }
  gpu.uuid = text.data();
  nvmlMemory_t memory{};
  if (api.memory(device, &memory) == kNvmlSuccess) {
    gpu.memory_total_mb = BytesToMb(memory.total);
    gpu.memory_used_mb = BytesToMb(memory.used);
    gpu.memory_free_mb = BytesToMb(memory.free);
  }
  ReadSensors(api, device, gpu);
  ReadProcesses(api, device, gpu);
  return gpu;
}

// NVML topology levels (0, 10, ..., 50) are LinkLevel's values by design.
LinkLevel ToLinkLevel(int nvml_level) {
  switch (nvml_level) {
    case 0:
      return LinkLevel::kSame;
    case 10:
      return LinkLevel::kSingleSwitch;
    case 20:
      return LinkLevel::kMultipleSwitch;
    case 30:
      return LinkLevel::kHostBridge;
    case 40:
      return LinkLevel::kNumaNode;
    case 50:
      return LinkLevel::kSystem;
    default:
      return LinkLevel::kUnknown;
  }
}

// Marks pairs joined by an active NVLink: a link's remote PCI address is another GPU's.
void MarkNvLinks(const NvmlBackend::Api& api, const std::vector<nvmlDevice_t>& devices,
                 GpuTopology& topology) {
  if (!api.nvlink_state || !api.nvlink_remote_pci || !api.pci_info) return;
  std::vector<nvmlPciInfo_t> pci(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    if (api.pci_info(devices[i], &pci[i]) != kNvmlSuccess) return;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    for (unsigned link = 0; link < kNvmlNvLinkMaxLinks; ++link) {
      int active = 0;
      nvmlPciInfo_t remote{};
      if (api.nvlink_state(devices[i], link, &active) != kNvmlSuccess || active == 0) continue;
      if (api.nvlink_remote_pci(devices[i], link, &remote) != kNvmlSuccess) continue;
      for (size_t j = 0; j < devices.size(); ++j) {
        if (j != i && pci[j].domain == remote.domain && pci[j].bus == remote.bus &&
            pci[j].device == remote.device) {
          topology.levels[i][j] = topology.levels[j][i] = LinkLevel::kNvLink;
        }
      }
    }
  }
}

GpuTopology ReadTopology(const NvmlBackend::Api& api, const std::vector<nvmlDevice_t>& devices) {
  GpuTopology topology;
  if (!api.common_ancestor || devices.empty()) return topology;
  const size_t n = devices.size();
  topology.levels.assign(n, std::vector<LinkLevel>(n, LinkLevel::kUnknown));
  for (size_t i = 0; i < n; ++i) {
    topology.levels[i][i] = LinkLevel::kSame;
    for (size_t j = i + 1; j < n; ++j) {
      int level = 0;
      if (api.common_ancestor(devices[i], devices[j], &level) == kNvmlSuccess) {
        topology.levels[i][j] = topology.levels[j][i] = ToLinkLevel(level);
      }
    }
  }
  MarkNvLinks(api, devices, topology);
  return topology;
}

}  // namespace

NvmlBackend::NvmlBackend(void* library, std::unique_ptr<Api> api)
    : library_(library), api_(std::move(api)) {}

NvmlBackend::~NvmlBackend() {
  api_->shutdown();
  dlclose(library_);
}

Result<std::unique_ptr<NvmlBackend>> NvmlBackend::Create(const std::string& library_path) {
  void* library = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return Unavailable(
        fmt::format("NVML is not available: cannot load {} ({}); install the NVIDIA driver, or use "
                    "--backend nvidia-smi or --backend simulated",
                    library_path, why ? why : "unknown dlopen error"));
  }
  auto api = std::make_unique<Api>();
  if (const char* missing = ResolveApi(library, *api)) {
    dlclose(library);
    return Unavailable(fmt::format(
        "NVML library {} lacks {}; the NVIDIA driver is too old or the library is not NVML",
        library_path, missing));
  }
  const nvmlReturn_t rc = api->init();
  if (rc != kNvmlSuccess) {
    std::string why = api->Describe(rc);
    dlclose(library);
    return Unavailable(
        fmt::format("NVML initialisation failed: {}; check that the NVIDIA "
                    "driver is loaded (nvidia-smi should work)",
                    why));
  }
  return std::unique_ptr<NvmlBackend>(new NvmlBackend(library, std::move(api)));
}

Result<GpuSnapshot> NvmlBackend::Query(Seconds now) {
  unsigned count = 0;
  nvmlReturn_t rc = api_->device_count(&count);
  if (rc != kNvmlSuccess) {
    return Unavailable(fmt::format("NVML: cannot count GPUs: {}", api_->Describe(rc)));
  }
  GpuSnapshot snapshot;
  snapshot.backend = "nvml";
  snapshot.taken_at = now;
  std::vector<nvmlDevice_t> devices;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    rc = api_->handle_by_index(i, &device);
    if (rc != kNvmlSuccess) {
      return Unavailable(fmt::format("NVML: cannot open GPU {}: {}", i, api_->Describe(rc)));
    }
    GS_ASSIGN_OR_RETURN(GpuInfo gpu, ReadDevice(*api_, i, device));
    snapshot.gpus.push_back(std::move(gpu));
    devices.push_back(device);
  }
  snapshot.topology = ReadTopology(*api_, devices);
  return snapshot;
}

}  // namespace gpuscale::gpu
