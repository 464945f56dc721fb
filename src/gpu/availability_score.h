// Availability score of a GPU in [0, 1]: how attractive it is for new work.
//   score = w_mem * free_share + w_util * idle_share
// with free_share = memory_free / memory_total and idle_share = 1 - utilization / 100
// (the composite score of the LLM Autotuner's GPU tracking; weights configurable, default
// 0.6 / 0.4). Weights are normalised by their sum so the score stays in [0, 1] whatever the
// user writes. A missing reading counts as the worst case for its term (0 free, fully busy):
// we never rank a GPU we know less about above one we know is free.
#pragma once

#include "gpu/gpu_info.h"

namespace gpuscale::gpu {

struct ScoreWeights {
  double memory = 0.6;       // weight of the free-memory share
  double utilization = 0.4;  // weight of the idle share

  friend bool operator==(const ScoreWeights&, const ScoreWeights&) = default;
};

// REQUIRES: weights non-negative, not both zero (validated where configured).
double AvailabilityScore(const GpuInfo& gpu, const ScoreWeights& weights = {});

// free memory / total memory in [0,1]; 0 when either is unknown or total is 0.
double FreeMemoryShare(const GpuInfo& gpu);

}  // namespace gpuscale::gpu
