#include "sim/disagg_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "scale/overridable_policy.h"

namespace gpuscale::sim {

DisaggPool::DisaggPool(std::string role, SimulationConfig config, const ReplicaModel& model,
                       std::unique_ptr<scale::Policy> policy, SharedGpus& shared, int index,
                       size_t requests)
    : role_(std::move(role)),
      config_(std::move(config)),
      records_(requests),
      orchestrator_(config_, model, records_, &shared, index),
      view_(config_.slo),
      family_(policy->Family()),
      controller_(std::make_unique<scale::OverridablePolicy>(std::move(policy)), orchestrator_,
                  scale::ControllerConfig{{config_.service.drain_timeout}}),
      picker_(config_.router) {}

void DisaggPool::StartWarm() {
  for (int i = 0; i < config_.service.ReadyAtStart(); ++i) {
    if (!orchestrator_.StartWarm(0)) break;
    orchestrator_.slots().back().engine->set_completion_log(&completion_log_);
  }
  peak_ = orchestrator_.PlacedReplicas();
}

void DisaggPool::Schedule(int slot) { events_.Schedule(orchestrator_, slot); }

void DisaggPool::Route(uint32_t id, double now) {
  ++routed_;
  const int best = PickReady(picker_, orchestrator_, candidates_, now);
  if (best < 0) {
    router_queue_.push_back(id);
    return;
  }
  auto& slots = orchestrator_.slots();
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

double DisaggPool::NextEventTime() { return events_.NextTime(orchestrator_); }

void DisaggPool::PopEvent(double t, std::vector<uint32_t>& finished) {
  const ReplicaEvent e = events_.Pop();
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

void DisaggPool::Scrape(double now) { ScrapeReplicas(now, orchestrator_, view_); }

void DisaggPool::Tick(double now, bool record_timeline, std::vector<std::string>& errors) {
  scale::ScalingInput input;
  Scrape(now);  // the policy reads the replicas as they are now, as the daemon's tick does
  view_.Fill(Seconds{now}, orchestrator_.ready_slots(), input);
  input.requests_waiting_without_replica = static_cast<int>(router_queue_.size());
  const scale::ControllerTick tick = controller_.Tick(Seconds{now}, std::move(input));
  for (const auto& e : tick.errors)
    errors.push_back(fmt::format("t={:.1f}: {}: {}", now, role_, e));
  controller_errors_ += static_cast<int>(tick.errors.size());
  if (last_desired_ >= 0 && tick.desired_replicas > last_desired_) ++scale_ups_;
  if (last_desired_ >= 0 && tick.desired_replicas < last_desired_) ++scale_downs_;
  last_desired_ = tick.desired_replicas;
  for (int slot : orchestrator_.TakePlaced()) {
    orchestrator_.slots()[slot].engine->set_completion_log(&completion_log_);
    events_.ColdStart(now + config_.service.cold_start.count(), slot);
  }
  for (int slot : orchestrator_.TakeRemoved()) view_.Forget(slot);
  orchestrator_.TakeResumed();
  FlushRouterQueue(now);
  peak_ = std::max(peak_, orchestrator_.PlacedReplicas());
  if (record_timeline) RecordRow(now, tick);
}

double DisaggPool::NextTickSeconds() const {
  return sim::NextTickSeconds(config_.control_interval.count(), orchestrator_,
                              static_cast<int>(router_queue_.size()));
}

void DisaggPool::RecordRow(double now, const scale::ControllerTick& tick) {
  const double elapsed = now - last_tick_s_;  // ticks come closer while the pool settles
  const double rate =
      elapsed > 0 ? static_cast<double>(routed_ - routed_at_last_tick_) / elapsed : 0;
  routed_at_last_tick_ = routed_;
  last_tick_s_ = now;
  timeline_.push_back(
      MakeTimelineRow(now, rate, tick, orchestrator_, static_cast<int>(router_queue_.size())));
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
