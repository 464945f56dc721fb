#include "gpu/availability_score.h"

#include <algorithm>

namespace gpuscale::gpu {

double FreeMemoryShare(const GpuInfo& gpu) {
  if (!gpu.memory_total_mb || *gpu.memory_total_mb <= 0) return 0.0;
  int64_t free_mb = 0;
  if (gpu.memory_free_mb) {
    free_mb = *gpu.memory_free_mb;
  } else if (gpu.memory_used_mb) {
    free_mb = *gpu.memory_total_mb - *gpu.memory_used_mb;
  }
  return std::clamp(static_cast<double>(free_mb) / static_cast<double>(*gpu.memory_total_mb),
                    0.0, 1.0);
}

double AvailabilityScore(const GpuInfo& gpu, const ScoreWeights& weights) {
  const double total_weight = weights.memory + weights.utilization;
  if (total_weight <= 0) return 0.0;
  const double idle_share =
      gpu.utilization_percent ? std::clamp(1.0 - *gpu.utilization_percent / 100.0, 0.0, 1.0)
                              : 0.0;
  return (weights.memory * FreeMemoryShare(gpu) + weights.utilization * idle_share) /
         total_weight;
}

}  // namespace gpuscale::gpu
