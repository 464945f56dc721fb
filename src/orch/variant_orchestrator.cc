#include "orch/variant_orchestrator.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace gpuscale::orch {

int ChooseVariant(const std::vector<VariantPlacement>& variants, const std::vector<int>& held,
                  const std::map<std::string, int>& free_gpus) {
  std::vector<scale::VariantOffer> offers;
  double capacity = 0, largest = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const VariantPlacement& v = variants[i];
    offers.push_back(
        {v.gpu_type, v.gpus_per_replica, v.capacity, v.price_per_hour, v.spot, held[i]});
    capacity += held[i] * v.capacity;
    largest = std::max(largest, v.capacity);
  }
  scale::AllocationLimits limits;
  limits.free_gpus = free_gpus;
  // The need the allocator weighs is what is held plus one largest replica, as the
  // simulator's; no per-type limit or budget: the inventory is the limit.
  return scale::CheapestFittingOffer(offers, held, limits, capacity + largest);
}

VariantOrchestrator::VariantOrchestrator(std::vector<VariantPlacement> variants,
                                         std::vector<PooledOrchestrator::Pool> pools,
                                         FreeGpuCounts free_gpus)
    : variants_(std::move(variants)),
      pools_(nullptr, std::move(pools)),
      free_gpus_(std::move(free_gpus)) {}

std::vector<int> VariantOrchestrator::Held() const {
  std::vector<int> held(variants_.size(), 0);
  for (size_t i = 0; i < variants_.size(); ++i) {
    for (const scale::ReplicaStatus& r : pools_.pool(i).ListReplicas()) {
      held[i] += r.phase != scale::ReplicaPhase::kPending ? 1 : 0;
    }
  }
  return held;
}

int VariantOrchestrator::Cheapest() const {
  int best = 0;
  for (size_t i = 1; i < variants_.size(); ++i) {
    const auto& v = variants_[i];
    const auto& b = variants_[static_cast<size_t>(best)];
    if (v.price_per_hour / v.capacity < b.price_per_hour / b.capacity) best = static_cast<int>(i);
  }
  return best;
}

std::vector<scale::ReplicaStatus> VariantOrchestrator::ListReplicas() const {
  std::vector<scale::ReplicaStatus> out;
  for (size_t i = 0; i < variants_.size(); ++i) {
    const VariantPlacement& v = variants_[i];
    for (scale::ReplicaStatus& r : pools_.pool(i).ListReplicas()) {
      if (preempting_.count(r.id) != 0) continue;  // on its way out: the controller replaces it
      // A pending replica may yet land on any variant: it counts as a reference replica (as
      // the reconciler counts a new one), not as the variant it waits in.
      r.capacity = r.phase == scale::ReplicaPhase::kPending ? 1.0 : v.capacity;
      r.drain_rank = v.price_per_hour / v.capacity;
      out.push_back(std::move(r));
    }
  }
  return out;
}

Result<scale::ReplicaStatus> VariantOrchestrator::Start(Seconds now) {
  const int chosen = ChooseVariant(variants_, Held(), free_gpus_(now));
  // None fits: the replica waits pending where it would cost least; Place moves it.
  Result<scale::ReplicaStatus> status =
      pools_.pool(static_cast<size_t>(chosen >= 0 ? chosen : Cheapest())).Start(now);
  if (status && status->phase != scale::ReplicaPhase::kPending) {
    status->capacity = variants_[static_cast<size_t>(pools_.PoolOf(status->id))].capacity;
  }
  return status;
}

Status VariantOrchestrator::Place(const std::string& id, Seconds now) {
  const int owner = pools_.PoolOf(id);
  if (owner < 0) return NotFound(fmt::format("no replica '{}'", id), "replica");
  const int chosen = ChooseVariant(variants_, Held(), free_gpus_(now));
  if (chosen < 0 || chosen == owner) return pools_.Place(id, now);
  // Another variant has GPUs now: the pending replica (which holds none) moves there.
  GS_RETURN_IF_ERROR(pools_.Stop(id, now));
  Result<scale::ReplicaStatus> moved = pools_.pool(static_cast<size_t>(chosen)).Start(now);
  if (!moved) return Unexpected<Error>(moved.error());
  return OkStatus();
}

Status VariantOrchestrator::Resume(const std::string& id, Seconds now) {
  if (preempting_.count(id) != 0) {
    return FailedPrecondition(fmt::format("replica '{}' is preempted", id), "replica");
  }
  return pools_.Resume(id, now);
}

Status VariantOrchestrator::Stop(const std::string& id, Seconds now) {
  preempting_.erase(id);
  return pools_.Stop(id, now);
}

Status VariantOrchestrator::Preempt(const std::string& id, Seconds notice, Seconds now) {
  const int variant = pools_.PoolOf(id);
  std::optional<scale::ReplicaStatus> found;
  if (variant >= 0) {
    for (scale::ReplicaStatus& r : pools_.pool(static_cast<size_t>(variant)).ListReplicas()) {
      if (r.id == id) found = std::move(r);
    }
  }
  if (!found) return NotFound(fmt::format("no replica '{}' (or it is stopping)", id), "replica");
  const Seconds deadline = now + notice;
  if (auto it = preempting_.find(id); it != preempting_.end()) {
    it->second.deadline = std::min(it->second.deadline, deadline);
    return OkStatus();
  }
  if (found->phase == scale::ReplicaPhase::kPending ||
      found->phase == scale::ReplicaPhase::kStarting) {
    events_.push_back({now, id, events::EventKind::kReplicaPreempted,
                       "spot notice: stopped at once (it served nothing yet)"});
    return pools_.Stop(id, now);
  }
  if (found->phase == scale::ReplicaPhase::kReady) GS_RETURN_IF_ERROR(pools_.Drain(id, now));
  preempting_[id] = {deadline, 0};
  events_.push_back({now, id, events::EventKind::kReplicaPreempting,
                     fmt::format("spot notice of {:g} s: takes no new requests, stops when its "
                                 "last one ends or by the deadline; a replacement starts",
                                 notice.count())});
  return OkStatus();
}

Status VariantOrchestrator::ReportOutstanding(const std::string& id, int outstanding) {
  if (auto it = preempting_.find(id); it != preempting_.end()) ++it->second.reports;
  return pools_.ReportOutstanding(id, outstanding);
}

void VariantOrchestrator::Poll(Seconds now) {
  pools_.Poll(now);
  EndPreemptions(now);
}

// A preempted replica goes when its last request ended (the daemon's reports: the gateway's
// exact count and the replica's own) or at its deadline, with what still runs aborted.
void VariantOrchestrator::EndPreemptions(Seconds now) {
  for (auto it = preempting_.begin(); it != preempting_.end();) {
    const std::string id = it->first;
    const Seconds deadline = it->second.deadline;
    const bool told = it->second.reports >= 2;
    const int variant = pools_.PoolOf(id);
    std::optional<int> outstanding;
    for (const scale::ReplicaStatus& r : pools_.pool(static_cast<size_t>(variant)).ListReplicas()) {
      if (r.id == id) outstanding = r.outstanding_requests;
    }
    if (outstanding && (*outstanding > 0 || !told) && now < deadline) {
      ++it;
      continue;
    }
    it = preempting_.erase(it);
    if (!outstanding) continue;  // gone already (crashed, stopped)
    events_.push_back(
        {now, id, events::EventKind::kReplicaPreempted,
         *outstanding > 0
             ? fmt::format("notice ran out: stopped with {} requests in flight", *outstanding)
             : fmt::format("drained: stopped {:g} s before its deadline",
                           (deadline - now).count())});
    // Its only error is an id that left meanwhile: nothing is left to stop.
    (void)pools_.Stop(id, now);
  }
}

std::vector<ReplicaInfo> VariantOrchestrator::Replicas(Seconds now) const {
  std::vector<ReplicaInfo> out = pools_.Replicas(now);
  for (ReplicaInfo& r : out) {
    const int variant = pools_.PoolOf(r.id);
    if (variant < 0) continue;
    r.variant = variants_[static_cast<size_t>(variant)].name;
    r.capacity = variants_[static_cast<size_t>(variant)].capacity;
    if (auto it = preempting_.find(r.id); it != preempting_.end()) {
      r.preempt_deadline = it->second.deadline;
    }
  }
  return out;
}

std::vector<OrchestratorEvent> VariantOrchestrator::TakeEvents() {
  std::vector<OrchestratorEvent> out = pools_.TakeEvents();
  out.insert(out.end(), std::make_move_iterator(events_.begin()),
             std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

}  // namespace gpuscale::orch
