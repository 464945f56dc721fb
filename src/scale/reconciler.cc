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

// Tolerance of capacity sums (sums of 1s stay exact; weights need not).
constexpr double kCapacityEpsilon = 1e-9;

// Removes active replicas, cheapest loss first, while the capacity left (`active`) still
// meets `desired`.
void ShrinkActive(const std::vector<ReplicaStatus>& replicas, double desired, double active,
                  std::vector<ReplicaAction>& stops, std::vector<ReplicaAction>& drains,
                  std::vector<bool>& removed) {
  auto spare = [&](size_t i) {
    return active - replicas[i].capacity >= desired - kCapacityEpsilon;
  };
  for (ReplicaPhase phase : {ReplicaPhase::kPending, ReplicaPhase::kStarting}) {
    auto list = InPhase(replicas, phase);
    for (auto it = list.rbegin(); it != list.rend(); ++it) {
      if (!spare(*it)) continue;
      active -= replicas[*it].capacity;
      removed[*it] = true;
      stops.push_back({Kind::kStop, replicas[*it].id,
                       fmt::format("scale in: cancel {} replica", ReplicaPhaseName(phase))});
    }
  }
  auto ready = InPhase(replicas, ReplicaPhase::kReady);
  // Highest drain rank first, then fewest outstanding; among equals the newest (stable sort
  // on reversed order).
  std::reverse(ready.begin(), ready.end());
  std::stable_sort(ready.begin(), ready.end(), [&](size_t a, size_t b) {
    if (replicas[a].drain_rank != replicas[b].drain_rank) {
      return replicas[a].drain_rank > replicas[b].drain_rank;
    }
    return replicas[a].outstanding_requests < replicas[b].outstanding_requests;
  });
  for (size_t i : ready) {
    if (!spare(i)) continue;
    active -= replicas[i].capacity;
    drains.push_back({Kind::kDrain, replicas[i].id,
                      fmt::format("scale in: fewest outstanding requests ({})",
                                  replicas[i].outstanding_requests)});
  }
}

// Resumes draining replicas (warmest first), then starts new ones (1 capacity each assumed),
// until the active capacity reaches `desired`.
void GrowActive(const std::vector<ReplicaStatus>& replicas, double desired, double active,
                std::vector<ReplicaAction>& resumes, std::vector<ReplicaAction>& starts,
                std::vector<bool>& resumed) {
  auto draining = InPhase(replicas, ReplicaPhase::kDraining);
  std::stable_sort(draining.begin(), draining.end(), [&](size_t a, size_t b) {
    return replicas[a].outstanding_requests > replicas[b].outstanding_requests;
  });
  for (size_t i = 0; i < draining.size() && active < desired - kCapacityEpsilon; ++i) {
    active += replicas[draining[i]].capacity;
    resumed[draining[i]] = true;
    resumes.push_back({Kind::kResume, replicas[draining[i]].id,
                       "scale out: resume a draining replica instead of a cold start"});
  }
  for (; active < desired - kCapacityEpsilon; active += 1) {
    starts.push_back({Kind::kStart, "", "scale out"});
  }
}

}  // namespace

std::vector<ReplicaAction> PlanReconcile(int desired, const std::vector<ReplicaStatus>& replicas,
                                         Seconds now, const ReconcilerConfig& config) {
  desired = std::max(desired, 0);
  double active = 0;
  for (const auto& r : replicas) active += r.phase != ReplicaPhase::kDraining ? r.capacity : 0;

  std::vector<ReplicaAction> stops, drains, resumes, places, starts;
  std::vector<bool> removed(replicas.size(), false), resumed(replicas.size(), false);
  if (active > desired + kCapacityEpsilon) {
    ShrinkActive(replicas, desired, active, stops, drains, removed);
  } else if (active < desired - kCapacityEpsilon) {
    GrowActive(replicas, desired, active, resumes, starts, resumed);
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
