// DisaggPool: one pool (prefill or decode) of a disaggregated simulation (sim/disagg.h): its
// request table, simulated orchestrator on the shared GPUs, metric view, controller with the
// pool's own policy, the router's picker and queue, and the pool's replica events.
//
// The engine owns both pools and drives time: it asks NextEventTime() of each, pops their
// events, ticks and scrapes them, and routes requests into them. Requests are indexed by trace
// id in both pools (a record stays empty in a pool the request has not reached).
//
// Ownership: owns everything above; borrows the model, the shared GPUs and the config, which
// must outlive it. Not movable (replicas hold references to its request table).
// Thread-safety: none (one simulation thread).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "route/picker.h"
#include "scale/controller.h"
#include "sim/disagg.h"
#include "sim/metric_view.h"
#include "sim/replica_events.h"
#include "sim/sim_orchestrator.h"
#include "sim/simulation.h"

namespace gpuscale::sim {

class DisaggPool {
 public:
  // `config` is the pool's view of the run: its `service` is the pool's spec, `slo` what its
  // metric view measures violations against. `index`: the pool's number in shared's budget.
  DisaggPool(std::string role, SimulationConfig config, const ReplicaModel& model,
             std::unique_ptr<scale::Policy> policy, SharedGpus& shared, int index, size_t requests);
  DisaggPool(const DisaggPool&) = delete;
  DisaggPool& operator=(const DisaggPool&) = delete;

  // Starts the pool's initial replicas, ready at t = 0.
  void StartWarm();
  RequestRecord& record(uint32_t id) { return records_[id]; }
  const std::vector<RequestRecord>& records() const { return records_; }
  // Sends request `id` (its record filled) to a ready replica, or queues it at the router.
  void Route(uint32_t id, double now);
  // The time of the pool's next replica event (a segment end or a cold start done).
  double NextEventTime();
  // Handles the event at `t` (REQUIRES: t == NextEventTime()); requests it completed are
  // appended to `finished`.
  void PopEvent(double t, std::vector<uint32_t>& finished);
  void Scrape(double now);
  // One control tick: scrapes the pool's replicas, then the policy reads them (as the
  // daemon's tick does); a row is added to the timeline when record_timeline.
  void Tick(double now, bool record_timeline, std::vector<std::string>& errors);

  // Seconds to the pool's next tick as the daemon's loop would space it (sim::NextTickSeconds).
  double NextTickSeconds() const;
  int gpus_in_use() const { return orchestrator_.gpus_in_use(); }
  // Requests routed here and neither finished nor aborted.
  int64_t Outstanding() const { return routed_ - completed_ - orchestrator_.aborted(); }
  // The pool's report at `end` (attainment left to the engine, which knows the user's view).
  PoolReport Summarize(double end) const;
  std::vector<TimelineRow>& timeline() { return timeline_; }

 private:
  void Schedule(int slot);
  void FlushRouterQueue(double now);
  void RecordRow(double now, const scale::ControllerTick& tick);

  std::string role_;
  SimulationConfig config_;
  std::vector<RequestRecord> records_;
  std::vector<uint32_t> completion_log_;  // filled by the replicas, drained by PopEvent
  SimOrchestrator orchestrator_;
  MetricView view_;
  std::string family_;
  scale::Controller controller_;
  route::Picker picker_;
  std::vector<route::Candidate> candidates_;
  ReplicaEvents events_;
  std::deque<uint32_t> router_queue_;
  int64_t routed_ = 0, completed_ = 0;
  int64_t routed_at_last_tick_ = 0;
  double last_tick_s_ = 0;
  int last_desired_ = -1;
  int scale_ups_ = 0, scale_downs_ = 0, peak_ = 0, controller_errors_ = 0;
  std::vector<TimelineRow> timeline_;
};

}  // namespace gpuscale::sim
