#include "scale/reconciler.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuscale::scale {

std::string_view ReplicaPhaseName(ReplicaPhase phase) {
  switch (phase) {
    case ReplicaPhase::kPending:
      return "pending";
    case ReplicaPhase::kStarting:
      return "starting";
    case ReplicaPhase::kReady:
      return "ready";
    case ReplicaPhase::kDraining:
      return "draining";
  }
  return "unknown";
}

std::string_view ActionKindName(ReplicaAction::Kind kind) {
  switch (kind) {
    case ReplicaAction::Kind::kStart:
      return "start";
    case ReplicaAction::Kind::kPlace:
      return "place";
    case ReplicaAction::Kind::kDrain:
      return "drain";
    case ReplicaAction::Kind::kResume:
      return "resume";
    case ReplicaAction::Kind::kStop:
      return "stop";
  }
  return "unknown";
}

namespace {

using Kind = ReplicaAction::Kind;

// Positions in `replicas` of one phase; creation order, so the newest is last.
std::vector<size_t> InPhase(const std::vector<ReplicaStatus>& replicas, ReplicaPhase phase) {
  std::vector<size_t> out;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (replicas[i].phase == phase) out.push_back(i);
  }
  return out;
}

// Removes up to `excess` active replicas, cheapest loss first; returns how many remain.
int ShrinkActive(const std::vector<ReplicaStatus>& replicas, int excess,
                 std::vector<ReplicaAction>& stops, std::vector<ReplicaAction>& drains,
                 std::vector<bool>& removed) {
  for (ReplicaPhase phase : {ReplicaPhase::kPending, ReplicaPhase::kStarting}) {
    auto list = InPhase(replicas, phase);
    for (auto it = list.rbegin(); it != list.rend() && excess > 0; ++it, --excess) {
      removed[*it] = true;
      stops.push_back({Kind::kStop, replicas[*it].id,
                       fmt::format("scale in: cancel {} replica", ReplicaPhaseName(phase))});
    }
  }
  auto ready = InPhase(replicas, ReplicaPhase::kReady);
  // Fewest outstanding first; among equals the newest (stable sort on reversed order).
  std::reverse(ready.begin(), ready.end());
  std::stable_sort(ready.begin(), ready.end(), [&](size_t a, size_t b) {
    return replicas[a].outstanding_requests < replicas[b].outstanding_requests;
  });
  for (size_t i = 0; i < ready.size() && excess > 0; ++i, --excess) {
    drains.push_back({Kind::kDrain, replicas[ready[i]].id,
                      fmt::format("scale in: fewest outstanding requests ({})",
                                  replicas[ready[i]].outstanding_requests)});
  }
  return excess;
}

// Resumes draining replicas (warmest first), then starts new ones, for `missing` replicas.
void GrowActive(const std::vector<ReplicaStatus>& replicas, int missing,
                std::vector<ReplicaAction>& resumes, std::vector<ReplicaAction>& starts,
                std::vector<bool>& resumed) {
  auto draining = InPhase(replicas, ReplicaPhase::kDraining);
  std::stable_sort(draining.begin(), draining.end(), [&](size_t a, size_t b) {
    return replicas[a].outstanding_requests > replicas[b].outstanding_requests;
  });
  for (size_t i = 0; i < draining.size() && missing > 0; ++i, --missing) {
    resumed[draining[i]] = true;
    resumes.push_back({Kind::kResume, replicas[draining[i]].id,
                       "scale out: resume a draining replica instead of a cold start"});
  }
  for (; missing > 0; --missing) starts.push_back({Kind::kStart, "", "scale out"});
}

}  // namespace

std::vector<ReplicaAction> PlanReconcile(int desired, const std::vector<ReplicaStatus>& replicas,
                                         Seconds now, const ReconcilerConfig& config) {
  desired = std::max(desired, 0);
  int active = 0;
  for (const auto& r : replicas) active += r.phase != ReplicaPhase::kDraining ? 1 : 0;

  std::vector<ReplicaAction> stops, drains, resumes, places, starts;
  std::vector<bool> removed(replicas.size(), false), resumed(replicas.size(), false);
  if (active > desired) {
    ShrinkActive(replicas, active - desired, stops, drains, removed);
  } else if (active < desired) {
    GrowActive(replicas, desired - active, resumes, starts, resumed);
  }
  for (size_t i = 0; i < replicas.size(); ++i) {
    const auto& r = replicas[i];
    if (r.phase == ReplicaPhase::kPending && !removed[i]) {
      places.push_back({Kind::kPlace, r.id, "retry placement of a pending replica"});
    }
    if (r.phase != ReplicaPhase::kDraining || resumed[i]) continue;
    if (r.outstanding_requests <= 0) {
      stops.push_back({Kind::kStop, r.id, "drained: no outstanding requests"});
    } else if (now - r.phase_since >= config.drain_timeout) {
      stops.push_back(
          {Kind::kStop, r.id,
           fmt::format("drain timeout: aborting {} outstanding requests", r.outstanding_requests)});
    }
  }
  std::vector<ReplicaAction> out;
  for (auto* list : {&stops, &drains, &resumes, &places, &starts}) {
    for (auto& a : *list) out.push_back(std::move(a));
  }
  return out;
}

}  // namespace gpuscale::scale
