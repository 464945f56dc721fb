#include "sim/disagg_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

namespace gpuscale::sim {

route::PickerSpec PickerSpecOf(const RouterSpec& router) {
  route::PickerSpec spec;
  spec.kind = router.kind == RouterKind::kRoundRobin ? route::PickerKind::kRoundRobin
                                                     : route::PickerKind::kLeastOutstanding;
  spec.slow_start_seconds = router.slow_start_seconds;
  return spec;
}

DisaggPool::DisaggPool(std::string role, SimulationConfig config, const ReplicaModel& model,
                       std::unique_ptr<scale::Policy> policy, SharedGpus& shared, int index,
                       size_t requests)
    : role_(std::move(role)),
      config_(std::move(config)),
      records_(requests),
      orchestrator_(config_, model, records_, &shared, index),
      view_(config_.slo),
      family_(policy->Family()),
      controller_(std::move(policy), orchestrator_,
                  scale::ControllerConfig{{config_.service.drain_timeout}}),
      picker_(PickerSpecOf(config_.router)) {}

void DisaggPool::StartWarm() {
  for (int i = 0; i < config_.service.ReadyAtStart(); ++i) {
    if (!orchestrator_.StartWarm(0)) break;
    orchestrator_.slots().back().engine->set_completion_log(&completion_log_);
  }
  peak_ = orchestrator_.PlacedReplicas();
}

void DisaggPool::Schedule(int slot) {
  auto& s = orchestrator_.slots()[slot];
  ++s.version;
  const double t = s.engine->NextEventTime();
  if (t < SimReplica::kNever) heap_.push({t, 0, slot, s.version});
}

void DisaggPool::Route(uint32_t id, double now) {
  ++routed_;
  const auto& ready = orchestrator_.ready_slots();
  if (ready.empty()) {
    router_queue_.push_back(id);
    return;
  }
  auto& slots = orchestrator_.slots();
  candidates_.clear();
  for (int slot : ready) {
    candidates_.push_back(
        {slots[slot].engine->Outstanding(), slots[slot].warm_since, static_cast<uint64_t>(slot)});
  }
  const int best = ready[*picker_.Pick(candidates_, now)];
  records_[id].on_fresh_replica = now - slots[best].warm_since < kFreshReplicaSeconds;
  if (slots[best].engine->Enqueue(id, now)) Schedule(best);
}

void DisaggPool::FlushRouterQueue(double now) {
  while (!router_queue_.empty() && !orchestrator_.ready_slots().empty()) {
    const uint32_t id = router_queue_.front();
    router_queue_.pop_front();
    --routed_;  // Route counts it again
    Route(id, now);
  }
}

double DisaggPool::NextEventTime() {
  while (!heap_.empty()) {
    const Event& e = heap_.top();
    const auto& s = orchestrator_.slots()[e.slot];
    if (!(s.gone || (e.kind == 0 && e.version != s.version))) return e.t;
    heap_.pop();
  }
  return SimReplica::kNever;
}

void DisaggPool::PopEvent(double t, std::vector<uint32_t>& finished) {
  const Event e = heap_.top();
  heap_.pop();
  auto& s = orchestrator_.slots()[e.slot];
  if (e.kind == 1) {
    orchestrator_.MarkReady(e.slot, t);
    FlushRouterQueue(t);
    return;
  }
  s.engine->FinishSegment(t);
  completed_ += static_cast<int64_t>(completion_log_.size());
  finished.insert(finished.end(), completion_log_.begin(), completion_log_.end());
  completion_log_.clear();
  Schedule(e.slot);
}

void DisaggPool::Scrape(double now) {
  for (int slot : orchestrator_.live_slots()) {
    const auto& s = orchestrator_.slots()[slot];
    if (s.phase == scale::ReplicaPhase::kReady || s.phase == scale::ReplicaPhase::kDraining) {
      view_.Scrape(Seconds{now}, slot, *s.engine);
    }
  }
}

void DisaggPool::Tick(double now, bool record_timeline, std::vector<std::string>& errors) {
  scale::ScalingInput input;
  view_.Fill(Seconds{now}, orchestrator_.ready_slots(), input);
  const scale::ControllerTick tick = controller_.Tick(Seconds{now}, std::move(input));
  for (const auto& e : tick.errors)
    errors.push_back(fmt::format("t={:.1f}: {}: {}", now, role_, e));
  controller_errors_ += static_cast<int>(tick.errors.size());
  if (last_desired_ >= 0 && tick.desired_replicas > last_desired_) ++scale_ups_;
  if (last_desired_ >= 0 && tick.desired_replicas < last_desired_) ++scale_downs_;
  last_desired_ = tick.desired_replicas;
  for (int slot : orchestrator_.TakePlaced()) {
    orchestrator_.slots()[slot].engine->set_completion_log(&completion_log_);
    heap_.push({now + config_.service.cold_start.count(), 1, slot, 0});
  }
  for (int slot : orchestrator_.TakeRemoved()) view_.Forget(slot);
  orchestrator_.TakeResumed();
  FlushRouterQueue(now);
  peak_ = std::max(peak_, orchestrator_.PlacedReplicas());
  if (record_timeline) RecordRow(now, tick);
}

void DisaggPool::RecordRow(double now, const scale::ControllerTick& tick) {
  TimelineRow row;
  row.time_s = now;
  row.arrival_rate =
      static_cast<double>(routed_ - routed_at_last_tick_) / config_.control_interval.count();
  routed_at_last_tick_ = routed_;
  row.desired = tick.desired_replicas;
  row.ready = orchestrator_.Count(scale::ReplicaPhase::kReady);
  row.starting = orchestrator_.Count(scale::ReplicaPhase::kStarting);
  row.pending = orchestrator_.Count(scale::ReplicaPhase::kPending);
  row.draining = orchestrator_.Count(scale::ReplicaPhase::kDraining);
  row.waiting = static_cast<int>(router_queue_.size());
  for (int slot : orchestrator_.live_slots()) {
    const auto& s = orchestrator_.slots()[slot];
    if (!s.engine) continue;
    row.waiting += s.engine->Waiting();
    row.running += s.engine->Running();
  }
  row.gpus_in_use = orchestrator_.gpus_in_use();
  row.reason = tick.decision.reason;
  timeline_.push_back(std::move(row));
}

PoolReport DisaggPool::Summarize(double end) const {
  PoolReport r;
  r.role = role_;
  r.policy = family_;
  r.gpu_hours = orchestrator_.GpuSeconds(end) / 3600.0;
  r.scale_ups = scale_ups_;
  r.scale_downs = scale_downs_;
  r.replicas_started = orchestrator_.started();
  r.replicas_stopped = orchestrator_.stopped();
  r.peak_replicas = peak_;
  r.aborted = orchestrator_.aborted();
  r.controller_errors = controller_errors_;
  return r;
}

}  // namespace gpuscale::sim
