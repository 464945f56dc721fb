#include "sim/replica_events.h"

#include <limits>

namespace gpuscale::sim {

void ReplicaEvents::Schedule(SimOrchestrator& orchestrator, int slot) {
  auto& s = orchestrator.slots()[slot];
  ++s.version;
  const double t = s.engine->NextEventTime();
  if (t < SimReplica::kNever) heap_.push({t, 0, slot, s.version});
}

double ReplicaEvents::NextTime(SimOrchestrator& orchestrator) {
  const auto& slots = orchestrator.slots();
  while (!heap_.empty()) {
    const ReplicaEvent& e = heap_.top();
    const auto& s = slots[e.slot];
    if (!(s.gone || (e.kind == 0 && e.version != s.version))) return e.t;
    heap_.pop();
  }
  return std::numeric_limits<double>::infinity();
}

ReplicaEvent ReplicaEvents::Pop() {
  const ReplicaEvent e = heap_.top();
  heap_.pop();
  return e;
}

int PickReady(route::Picker& picker, SimOrchestrator& orchestrator,
              std::vector<route::Candidate>& candidates, double now) {
  const auto& ready = orchestrator.ready_slots();
  if (ready.empty()) return -1;
  const auto& slots = orchestrator.slots();
  candidates.clear();
  for (int slot : ready) {
    candidates.push_back(
        {slots[slot].engine->Outstanding(), slots[slot].warm_since, static_cast<uint64_t>(slot)});
  }
  return ready[*picker.Pick(candidates, now)];
}

void ScrapeReplicas(double now, SimOrchestrator& orchestrator, MetricView& view) {
  for (int slot : orchestrator.live_slots()) {
    const auto& s = orchestrator.slots()[slot];
    if (s.phase == scale::ReplicaPhase::kReady || s.phase == scale::ReplicaPhase::kDraining) {
      view.Scrape(Seconds{now}, slot, *s.engine);
    }
  }
}

TimelineRow MakeTimelineRow(double now, double arrival_rate, const scale::ControllerTick& tick,
                            SimOrchestrator& orchestrator, int router_queued) {
  TimelineRow row;
  row.time_s = now;
  row.arrival_rate = arrival_rate;
  row.desired = tick.desired_replicas;
  row.ready = orchestrator.Count(scale::ReplicaPhase::kReady);
  row.starting = orchestrator.Count(scale::ReplicaPhase::kStarting);
  row.pending = orchestrator.Count(scale::ReplicaPhase::kPending);
  row.draining = orchestrator.Count(scale::ReplicaPhase::kDraining);
  row.waiting = router_queued;
  for (int slot : orchestrator.live_slots()) {
    const auto& s = orchestrator.slots()[slot];
    if (!s.engine) continue;
    row.waiting += s.engine->Waiting();
    row.running += s.engine->Running();
  }
  row.gpus_in_use = orchestrator.gpus_in_use();
  row.reason = tick.decision.reason;
  return row;
}

}  // namespace gpuscale::sim
