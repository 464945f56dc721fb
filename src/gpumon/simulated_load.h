// Load on simulated GPUs: a simulated inventory is static, so GPUs leased to emulated
// replicas would read 0 % and 0 MiB under any traffic. The daemon reads each emulated
// replica's own gauges (metrics::emulated: batch occupancy, bytes per GPU) every tick, and
// the experiment runner its server's while it benchmarks, and posts them on a GpuLoadBoard; LoadedSimulatedBackend adds them to every snapshot, so the
// monitor's history, the dashboard and experiments' gpu_monitoring show the load the
// replicas carry. Real backends report real load and are never wrapped.
//
// Thread-safety: GpuLoadBoard is safe from any thread (the daemon's loop writes, the
// monitor's sampler reads). LoadedSimulatedBackend, like every backend, has one caller at a
// time. ApplyLoad is pure.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/gpu_info.h"

namespace gpuscale::gpu {

class SimulatedThermals;

// What the replicas on one GPU put on it.
struct GpuLoad {
  double utilization_percent = 0;  // summed over replicas, capped at 100 when applied
  int64_t memory_used_mb = 0;      // MiB, on top of the inventory's own reading
  // One entry per replica (its pid, memory and owner), the process table nvidia-smi would
  // show for a real GPU.
  std::vector<GpuProcess> processes = {};
  friend bool operator==(const GpuLoad&, const GpuLoad&) = default;
};

using GpuLoads = std::map<int, GpuLoad>;  // by GPU index

// Loads by source: the daemon's services post under one name every tick, each running
// experiment under its own while it benchmarks; a reading sums them.
class GpuLoadBoard {
 public:
  // Replaces `source`'s loads: a GPU absent from `loads` carries none of it (its replica is
  // gone).
  void Set(const std::string& source, GpuLoads loads);
  // Drops `source` (its server stopped).
  void Clear(const std::string& source);
  // Every source's loads added up per GPU.
  GpuLoads Get() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, GpuLoads> by_source_;  // guarded by mu_
};

// The loads of several sources (or replicas) added up per GPU: utilization and memory
// summed, processes joined.
GpuLoads SumLoads(const std::map<std::string, GpuLoads>& by_source);

// A loaded GPU's utilization becomes the load's (at most 100), its used memory the
// inventory's plus the load's (at most the total), its free memory the rest, and the load's
// processes join its process list. GPUs
// without a load, and loads for indices the snapshot lacks, are left alone.
void ApplyLoad(GpuSnapshot& snapshot, const GpuLoads& loads);

// A simulated backend with the board's loads applied to each snapshot, and the power and
// temperature those loads give (SimulatedThermals, in simulated_thermals.h).
class LoadedSimulatedBackend final : public GpuBackend {
 public:
  LoadedSimulatedBackend(std::unique_ptr<GpuBackend> simulated,
                         std::shared_ptr<const GpuLoadBoard> board);
  ~LoadedSimulatedBackend() override;
  std::string_view Name() const override { return simulated_->Name(); }
  Result<GpuSnapshot> Query(Seconds now) override;

 private:
  std::unique_ptr<GpuBackend> simulated_;
  std::shared_ptr<const GpuLoadBoard> board_;
  std::unique_ptr<SimulatedThermals> thermals_;
};

}  // namespace gpuscale::gpu
