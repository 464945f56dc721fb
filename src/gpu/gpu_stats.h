// Running aggregates of GPU readings over a monitoring window: min / max / mean / sample
// count per GPU and metric. Absent readings (nullopt) are skipped, so `samples` can differ
// between metrics of one GPU (a GPU whose power reads [N/A] has power samples == 0).
//
// Thread-safety: plain values; the Monitor guards its copy with a mutex.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "gpu/gpu_info.h"

namespace gpuscale::gpu {

struct MetricStats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  int64_t samples = 0;

  void Add(std::optional<double> value) {
    if (!value) return;
    min = std::min(min, *value);
    max = std::max(max, *value);
    sum += *value;
    ++samples;
  }
  // nullopt when no sample was seen.
  std::optional<double> Mean() const {
    return samples > 0 ? std::optional<double>(sum / static_cast<double>(samples)) : std::nullopt;
  }
};

struct GpuStats {
  std::string name;
  MetricStats utilization_percent;
  MetricStats memory_used_mb;
  MetricStats memory_usage_percent;  // used / total * 100
  MetricStats temperature_c;
  MetricStats power_draw_w;

  // Folds one reading of this GPU in.
  void Add(const GpuInfo& gpu);
};

// Keyed by GPU index.
using GpuStatsMap = std::map<int, GpuStats>;

// One point of a monitor's history ring (gpumon/monitor.h): the readings of every GPU at one
// instant.
struct HistoryPoint {
  Seconds taken_at{0};
  std::vector<GpuInfo> gpus;  // processes dropped to keep the ring small
};

}  // namespace gpuscale::gpu
