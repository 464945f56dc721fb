#include "sim/replica_events.h"

#include <algorithm>
#include <limits>

#include "scale/tick_interval.h"

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

namespace {

// The leading `keys` a prompt of `input_tokens` may hit (vLLM computes at least its last
// token), or fill (every full block), in blocks of `block_tokens`.
std::span<const uint64_t> Blocks(std::span<const uint64_t> keys, int64_t input_tokens,
                                 int32_t block_tokens, bool for_lookup) {
  if (block_tokens <= 0 || input_tokens <= 0) return {};
  const int64_t n = (for_lookup ? input_tokens - 1 : input_tokens) / block_tokens;
  return keys.first(std::min<size_t>(keys.size(), static_cast<size_t>(n)));
}

// Candidate::cached_tokens and pending_prefill_tokens of one replica for `r`.
void FillPrefix(route::Candidate& c, const SimReplica& engine, const RequestRecord& r,
                const route::PrefixIndex* index, double now) {
  c.pending_prefill_tokens = engine.PendingPrefillTokens();
  if (index == nullptr) {
    c.cached_tokens = engine.CachedPrefixTokens(r.block_keys, r.input_tokens);
    return;
  }
  const int32_t block = engine.block_tokens();
  c.cached_tokens =
      index->Match(c.identity, Blocks(r.block_keys, r.input_tokens, block, true), now) * block;
}

}  // namespace

int PickReady(route::Picker& picker, SimOrchestrator& orchestrator,
              std::vector<route::Candidate>& candidates, double now, const RequestRecord* request,
              route::PrefixIndex* index, int max_in_flight) {
  const auto& slots = orchestrator.slots();
  std::vector<int> open;  // only with a limit: most runs have none and allocate nothing
  if (max_in_flight > 0) {
    for (int slot : orchestrator.ready_slots()) {
      if (slots[slot].engine->Outstanding() < max_in_flight) open.push_back(slot);
    }
  }
  const auto& ready = max_in_flight > 0 ? open : orchestrator.ready_slots();
  if (ready.empty()) return -1;
  const bool by_cache = request != nullptr && picker.spec().kind == route::PickerKind::kPrefixCache;
  candidates.clear();
  for (int slot : ready) {
    candidates.push_back(
        {slots[slot].engine->Outstanding(), slots[slot].warm_since, static_cast<uint64_t>(slot)});
    candidates.back().capacity_weight = orchestrator.CapacityOf(slot);
    candidates.back().max_prompt_tokens = orchestrator.MaxPromptOf(slot);
    if (by_cache) FillPrefix(candidates.back(), *slots[slot].engine, *request, index, now);
  }
  std::optional<uint64_t> prefix_key;
  if (request != nullptr && !request->block_keys.empty()) prefix_key = request->block_keys[0];
  const int slot =
      ready[*picker.Pick(candidates, now, prefix_key, request ? request->input_tokens : 0)];
  if (by_cache && index != nullptr) {
    const auto& engine = *slots[slot].engine;
    index->Record(static_cast<uint64_t>(slot),
                  Blocks(request->block_keys, request->input_tokens, engine.block_tokens(), false),
                  now);
  }
  return slot;
}

void ScrapeReplicas(double now, SimOrchestrator& orchestrator, MetricView& view) {
  for (int slot : orchestrator.live_slots()) {
    const auto& s = orchestrator.slots()[slot];
    if (s.phase == scale::ReplicaPhase::kReady || s.phase == scale::ReplicaPhase::kDraining) {
      view.Scrape(Seconds{now}, slot, *s.engine);
    }
  }
}

double NextTickSeconds(double control_interval, const SimOrchestrator& orchestrator, int queued) {
  const bool settling = orchestrator.Count(scale::ReplicaPhase::kStarting) > 0 ||
                        orchestrator.Count(scale::ReplicaPhase::kDraining) > 0;
  return scale::TickInterval(Seconds{control_interval}, queued > 0, settling,
                             scale::kDefaultProbeInterval)
      .count();
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
