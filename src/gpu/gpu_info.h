// GPU inventory types shared by every module: what one GPU looks like at one instant
// (`GpuInfo`), a consistent reading of all GPUs (`GpuSnapshot`), and the interface every
// source of such readings implements (`GpuBackend`: NVML, nvidia-smi, simulated).
//
// Absent values are explicit (std::nullopt), never 0: a GPU whose power sensor reads
// "[N/A]" has power_draw_w == nullopt, which scoring and allocation treat conservatively.
//
// Thread-safety: plain values. A GpuBackend is used by one thread at a time (the Monitor
// serializes calls); implementations need not lock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::gpu {

// A compute process running on a GPU, where the backend knows it (NVML, nvidia-smi apps).
struct GpuProcess {
  int pid = 0;
  std::optional<int64_t> used_memory_mb;
  std::string name;  // executable name when known (simulated GPUs: the replica's owner)
  friend bool operator==(const GpuProcess&, const GpuProcess&) = default;
};

struct GpuInfo {
  int index = 0;
  std::string uuid;
  std::string name;
  std::optional<int64_t> memory_total_mb;  // MiB, as nvidia-smi/NVML report
  std::optional<int64_t> memory_used_mb;
  std::optional<int64_t> memory_free_mb;
  std::optional<double> utilization_percent;  // 0..100, SM busy share over the last sample
  std::optional<double> temperature_c;
  std::optional<double> power_draw_w;
  std::vector<GpuProcess> processes;
  std::string node;  // host the GPU sits on; empty means this machine
  // Type key (gpu/gpu_type.h: "H100-80GB"): what a request's gpu_type matches and prices are
  // listed by. Empty means unknown; backends fill it from `name` (gpumon/priced_backend.h).
  std::string type;
  // Price of one GPU-hour in the operator's currency (the inventory or the config's price
  // list by type); nullopt means unknown, shown as "-", never 0.
  std::optional<double> price_per_hour;
  // Preemptible capacity: the provider may reclaim it (priced lower). Inventory only.
  bool spot = false;
};

// How close two GPUs are; lower is closer. Mirrors NVML's nvmlGpuTopologyLevel_t ordering
// (0 same board ... 50 across CPU sockets); NVLink peers use kNvLink.
enum class LinkLevel : int {
  kSame = 0,
  kNvLink = 5,
  kSingleSwitch = 10,  // NVML_TOPOLOGY_SINGLE
  kMultipleSwitch = 20,
  kHostBridge = 30,
  kNumaNode = 40,
  kSystem = 50,
  kUnknown = 100,
};

// Pairwise topology. Empty when the backend does not know it; otherwise
// levels[i][j] refers to gpus[i] and gpus[j] of the same snapshot (positions, not indices).
struct GpuTopology {
  std::vector<std::vector<LinkLevel>> levels;
  bool Known() const { return !levels.empty(); }
};

struct GpuSnapshot {
  std::string backend;       // "nvml", "nvidia-smi", "simulated"
  Seconds taken_at{0};       // clock time of the reading
  std::vector<GpuInfo> gpus;  // ordered by index
  GpuTopology topology;
};

// A source of GPU readings. Errors: kUnavailable when the driver/tool is missing or fails
// (message says what to install or check), kInvalidArgument when its output cannot be parsed
// (message names the line/column).
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string_view Name() const = 0;
  // Reads every GPU now. `now` stamps the snapshot (time as a parameter).
  virtual Result<GpuSnapshot> Query(Seconds now) = 0;
};

}  // namespace gpuscale::gpu
