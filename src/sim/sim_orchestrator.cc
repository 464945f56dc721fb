#include "sim/sim_orchestrator.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace gpuscale::sim {

using scale::ReplicaPhase;

gpu::GpuSnapshot MakeSimInventory(const ClusterSpec& cluster) {
  gpu::GpuSnapshot snapshot;
  snapshot.backend = "simulated";
  for (int n = 0; n < cluster.nodes; ++n) {
    for (int g = 0; g < cluster.gpus_per_node; ++g) {
      gpu::GpuInfo info;
      info.index = g;
      info.node = fmt::format("node-{}", n);
      info.uuid = fmt::format("GPU-sim-{}-{}", n, g);
      info.name = cluster.gpu_type;
      info.memory_total_mb = cluster.gpu_memory_mb;
      info.memory_used_mb = 0;
      info.memory_free_mb = cluster.gpu_memory_mb;
      info.utilization_percent = 0;
      snapshot.gpus.push_back(std::move(info));
    }
  }
  return snapshot;
}

SimOrchestrator::SimOrchestrator(const SimulationConfig& config, const ReplicaModel& model,
                                 std::vector<RequestRecord>& requests, SharedGpus* shared, int pool)
    : config_(config),
      model_(model),
      requests_(requests),
      gpus_per_replica_(std::max(config.service.gpus_per_replica, 1)),
      inventory_(shared ? gpu::GpuSnapshot{} : MakeSimInventory(config.cluster)),
      shared_(shared),
      pool_(pool) {}

std::vector<scale::ReplicaStatus> SimOrchestrator::ListReplicas() const {
  std::vector<scale::ReplicaStatus> out;
  out.reserve(live_.size());
  for (int slot : live_) {
    const auto& s = slots_[slot];
    out.push_back({s.id, s.phase, Seconds{s.phase_since},
                   s.engine ? s.engine->Outstanding() : 0});
  }
  return out;
}

int SimOrchestrator::Find(const std::string& id) const {
  for (int slot : live_) {
    if (slots_[slot].id == id) return slot;
  }
  return -1;
}

int SimOrchestrator::Count(ReplicaPhase phase) const {
  return static_cast<int>(std::count_if(live_.begin(), live_.end(),
                                         [&](int s) { return slots_[s].phase == phase; }));
}

bool SimOrchestrator::TryPlace(int slot, double now) {
  auto& s = slots_[slot];
  alloc::SelectionRequest request;
  request.gpu_count = gpus_per_replica_;
  if (shared_ == nullptr) {
    if (!ledger_.Allocate(inventory_, request, s.id, Seconds{now})) return false;
  } else {
    // The budget first: a grant it refuses must not take GPUs from the ledger.
    if (!shared_->budget.Acquire(pool_, gpus_per_replica_)) return false;
    if (!shared_->ledger.Allocate(shared_->inventory, request, s.id, Seconds{now})) {
      shared_->budget.Release(pool_, gpus_per_replica_);
      return false;
    }
  }
  s.phase = ReplicaPhase::kStarting;
  s.phase_since = now;
  s.placed_at = now;
  s.engine = std::make_unique<SimReplica>(model_, requests_, prefix_block_tokens_);
  ++placed_;
  placed_new_.push_back(slot);
  return true;
}

Result<scale::ReplicaStatus> SimOrchestrator::Start(Seconds now) {
  int slot = static_cast<int>(slots_.size());
  slots_.push_back({});
  slots_[slot].id = fmt::format("{}-{}", config_.service.name, slot);
  slots_[slot].phase_since = now.count();
  live_.push_back(slot);
  ++started_;
  TryPlace(slot, now.count());
  const auto& s = slots_[slot];
  return scale::ReplicaStatus{s.id, s.phase, Seconds{s.phase_since}, 0};
}

bool SimOrchestrator::StartWarm(double now) {
  auto status = Start(Seconds{now});
  int slot = static_cast<int>(slots_.size()) - 1;
  --started_;  // initial replicas are not scale-ups
  if (status->phase != ReplicaPhase::kStarting) return false;
  placed_new_.pop_back();
  MarkReady(slot, now);
  slots_[slot].warm_since = -std::numeric_limits<double>::infinity();
  return true;
}

Status SimOrchestrator::Place(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  if (slots_[slot].phase != ReplicaPhase::kPending) {
    return FailedPrecondition(fmt::format("replica '{}' is not pending", id));
  }
  if (!TryPlace(slot, now.count())) {
    return ResourceExhausted(fmt::format("no {} free GPUs for replica '{}'", gpus_per_replica_,
                                         id));
  }
  return OkStatus();
}

void SimOrchestrator::SetReady(int slot, bool ready) {
  auto it = std::find(ready_.begin(), ready_.end(), slot);
  if (ready && it == ready_.end()) {
    ready_.insert(std::upper_bound(ready_.begin(), ready_.end(), slot), slot);
  } else if (!ready && it != ready_.end()) {
    ready_.erase(it);
  }
}

void SimOrchestrator::MarkReady(int slot, double now) {
  auto& s = slots_[slot];
  if (s.gone || s.phase != ReplicaPhase::kStarting) return;
  s.phase = ReplicaPhase::kReady;
  s.phase_since = now;
  s.warm_since = now;
  SetReady(slot, true);
}

Status SimOrchestrator::Drain(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  if (slots_[slot].phase != ReplicaPhase::kReady) {
    return FailedPrecondition(fmt::format("replica '{}' is not ready", id));
  }
  slots_[slot].phase = ReplicaPhase::kDraining;
  slots_[slot].phase_since = now.count();
  SetReady(slot, false);
  return OkStatus();
}

Status SimOrchestrator::Resume(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  if (slots_[slot].phase != ReplicaPhase::kDraining) {
    return FailedPrecondition(fmt::format("replica '{}' is not draining", id));
  }
  slots_[slot].phase = ReplicaPhase::kReady;
  slots_[slot].phase_since = now.count();
  SetReady(slot, true);
  resumed_.push_back(slot);
  return OkStatus();
}

void SimOrchestrator::Release(int slot, double now) {
  auto& s = slots_[slot];
  if (s.placed_at >= 0) {
    gpu_seconds_closed_ += (now - s.placed_at) * gpus_per_replica_;
    if (shared_ == nullptr) {
      ledger_.ReleaseOwner(s.id);
    } else {
      shared_->ledger.ReleaseOwner(s.id);
      shared_->budget.Release(pool_, gpus_per_replica_);
    }
    --placed_;
  }
  if (s.engine) aborted_ += s.engine->AbortAll();
  s.engine.reset();
  s.gone = true;
  ++s.version;
  SetReady(slot, false);
  live_.erase(std::find(live_.begin(), live_.end(), slot));
  removed_.push_back(slot);
}

Status SimOrchestrator::Stop(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  Release(slot, now.count());
  ++stopped_;
  return OkStatus();
}

void SimOrchestrator::Crash(int slot, double now) {
  if (!slots_[slot].gone) Release(slot, now);
}

double SimOrchestrator::GpuSeconds(double now) const {
  double total = gpu_seconds_closed_;
  for (int slot : live_) {
    if (slots_[slot].placed_at >= 0) total += (now - slots_[slot].placed_at) * gpus_per_replica_;
  }
  return total;
}

std::vector<int> SimOrchestrator::TakePlaced() { return std::exchange(placed_new_, {}); }
std::vector<int> SimOrchestrator::TakeRemoved() { return std::exchange(removed_, {}); }
std::vector<int> SimOrchestrator::TakeResumed() { return std::exchange(resumed_, {}); }

}  // namespace gpuscale::sim
