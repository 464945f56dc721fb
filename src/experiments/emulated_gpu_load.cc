#include "experiments/emulated_gpu_load.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "metrics/metric_lookup.h"
#include "metrics/vllm_metric_names.h"

namespace gpuscale::experiments {
namespace {

// The gauge summed over the scrape's series (one per engine), or nullopt when absent.
std::optional<double> Gauge(const metrics::Exposition& scrape, std::string_view name) {
  Result<double> value = metrics::FindValue(scrape, name, {}, metrics::Combine::kSum);
  if (!value) return std::nullopt;
  return std::isfinite(*value) && *value > 0 ? *value : 0.0;
}

}  // namespace

void AddEmulatedGpuLoad(const metrics::Exposition& scrape, const std::vector<int>& gpus,
                        const gpu::GpuProcess& process, gpu::GpuLoads& loads) {
  const std::optional<double> ratio = Gauge(scrape, metrics::emulated::kGpuUtilizationRatio);
  const std::optional<double> bytes = Gauge(scrape, metrics::emulated::kGpuMemoryUsedBytes);
  if (!ratio && !bytes) return;
  const auto used_mb = static_cast<int64_t>(std::min(bytes.value_or(0), 1e18) / (1 << 20));
  for (int index : gpus) {
    gpu::GpuLoad& load = loads[index];
    load.utilization_percent += std::min(ratio.value_or(0), 1.0) * 100;
    load.memory_used_mb += used_mb;
    gpu::GpuProcess& entry = load.processes.emplace_back(process);
    entry.used_memory_mb = used_mb;
  }
}

}  // namespace gpuscale::experiments
