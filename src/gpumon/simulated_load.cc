#include "gpumon/simulated_load.h"

#include <algorithm>
#include <utility>

#include "gpumon/simulated_thermals.h"

namespace gpuscale::gpu {

void GpuLoadBoard::Set(const std::string& source, GpuLoads loads) {
  std::lock_guard lock(mu_);
  by_source_[source] = std::move(loads);
}

void GpuLoadBoard::Clear(const std::string& source) {
  std::lock_guard lock(mu_);
  by_source_.erase(source);
}

GpuLoads SumLoads(const std::map<std::string, GpuLoads>& by_source) {
  GpuLoads total;
  for (const auto& [source, loads] : by_source) {
    for (const auto& [index, load] : loads) {
      GpuLoad& sum = total[index];
      sum.utilization_percent += load.utilization_percent;
      sum.memory_used_mb += load.memory_used_mb;
      sum.processes.insert(sum.processes.end(), load.processes.begin(), load.processes.end());
    }
  }
  return total;
}

GpuLoads GpuLoadBoard::Get() const {
  std::lock_guard lock(mu_);
  return SumLoads(by_source_);
}

void ApplyLoad(GpuSnapshot& snapshot, const GpuLoads& loads) {
  for (GpuInfo& gpu : snapshot.gpus) {
    auto it = loads.find(gpu.index);
    if (it == loads.end()) continue;
    const GpuLoad& load = it->second;
    gpu.utilization_percent = std::clamp(load.utilization_percent, 0.0, 100.0);
    int64_t used = gpu.memory_used_mb.value_or(0) + std::max<int64_t>(load.memory_used_mb, 0);
    if (gpu.memory_total_mb) {
      used = std::min(used, *gpu.memory_total_mb);
      gpu.memory_free_mb = *gpu.memory_total_mb - used;
    }
    gpu.memory_used_mb = used;
    gpu.processes.insert(gpu.processes.end(), load.processes.begin(), load.processes.end());
  }
}

LoadedSimulatedBackend::LoadedSimulatedBackend(std::unique_ptr<GpuBackend> simulated,
                                               std::shared_ptr<const GpuLoadBoard> board)
    : simulated_(std::move(simulated)),
      board_(std::move(board)),
      thermals_(std::make_unique<SimulatedThermals>()) {}

LoadedSimulatedBackend::~LoadedSimulatedBackend() = default;

Result<GpuSnapshot> LoadedSimulatedBackend::Query(Seconds now) {
  GS_ASSIGN_OR_RETURN(GpuSnapshot snapshot, simulated_->Query(now));
  const GpuLoads loads = board_->Get();
  thermals_->Apply(snapshot, loads, now);  // reads the inventory's idle power and temperature
  ApplyLoad(snapshot, loads);
  return snapshot;
}

}  // namespace gpuscale::gpu
