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

// A mixed fleet on one node: `h100` idle "H100-80GB" GPUs at 2.49 per GPU-hour (indices 0..),
// then `a100` "A100-80GB" GPUs at 1.29 whose readings rank them below every H100 (half
// their memory used), so that a selection that ignored the type would pick an H100.
inline gpu::GpuSnapshot MixedSnapshot(int h100, int a100) {
  std::vector<gpu::GpuInfo> gpus;
  for (int i = 0; i < h100 + a100; ++i) {
    const bool is_h100 = i < h100;
    gpu::GpuInfo g = MakeGpu(i, is_h100 ? 81559 : 40000, is_h100 ? 0 : 50);
    g.name = is_h100 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-80GB";
    g.type = is_h100 ? "H100-80GB" : "A100-80GB";
    g.price_per_hour = is_h100 ? 2.49 : 1.29;
    gpus.push_back(std::move(g));
  }
  return MakeSnapshot(std::move(gpus));
}

}  // namespace gpuscale::alloc::testing
