// The load an emulated replica puts on its simulated GPUs, read from its own /metrics
// (metrics::emulated: batch occupancy and bytes per GPU; gpumon/simulated_load.h says why).
//
// Thread-safety: a pure function.
#pragma once

#include <vector>

#include "gpumon/simulated_load.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::experiments {

// Adds one replica's load to each of its `gpus`: utilization (occupancy x 100) and memory
// (bytes per GPU, in MiB), summed when several replicas share a GPU. A scrape without the
// emulator's gauges (a real engine) adds nothing; a value out of range (negative, not finite)
// counts as 0 rather than corrupting the reading. `process` (pid and owner name) joins each
// GPU's process list with its memory on that GPU.
void AddEmulatedGpuLoad(const metrics::Exposition& scrape, const std::vector<int>& gpus,
                        const gpu::GpuProcess& process, gpu::GpuLoads& loads);

}  // namespace gpuscale::experiments
