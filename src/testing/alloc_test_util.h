// Test-only helpers for alloc tests: compact GPU and snapshot builders. Not part of the
// library API (only *_test.cc files include it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_info.h"

namespace gpuscale::alloc::testing {

// A GPU with `total_mb` memory of which `free_mb` is free, at `util` percent.
inline gpu::GpuInfo MakeGpu(int index, int64_t free_mb, double util, int64_t total_mb = 81559,
                            std::string node = "") {
  gpu::GpuInfo g;
  g.index = index;
  g.uuid =
      node.empty() ? "GPU-" + std::to_string(index) : "GPU-" + node + "-" + std::to_string(index);
  g.name = "NVIDIA H100 80GB HBM3";
  g.memory_total_mb = total_mb;
  g.memory_free_mb = free_mb;
  g.memory_used_mb = total_mb - free_mb;
  g.utilization_percent = util;
  g.node = std::move(node);
  return g;
}

inline gpu::GpuSnapshot MakeSnapshot(std::vector<gpu::GpuInfo> gpus) {
  gpu::GpuSnapshot s;
  s.backend = "simulated";
  s.gpus = std::move(gpus);
  return s;
}

// `count` identical idle GPUs (all free, 0% busy) on one node.
inline gpu::GpuSnapshot IdleSnapshot(int count) {
  std::vector<gpu::GpuInfo> gpus;
  for (int i = 0; i < count; ++i) gpus.push_back(MakeGpu(i, 81559, 0));
  return MakeSnapshot(std::move(gpus));
}

}  // namespace gpuscale::alloc::testing
