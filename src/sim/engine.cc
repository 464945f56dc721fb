// The discrete-event loop of RunSimulation. Event order at equal times (so runs are
// reproducible): spot preemption notices and reclaims, replica segment ends and cold-start
// completions, crashes, control ticks, scrapes, then arrivals. A control tick scrapes every
// ready and draining replica before the policy reads them, as the daemon's TickCollector
// does live, so a tick acts on the replicas' state at the tick, not on the last
// scrape_interval sample; a scrape due at a tick's instant is that tick's scrape. Ticks
// are spaced as the daemon's loop spaces them (NextTickSeconds): closer while a replica
// starts or drains or requests wait for one.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "core/numbers.h"
#include "route/picker.h"
#include "scale/controller.h"
#include "scale/overridable_policy.h"
#include "sim/disagg_pool.h"
#include "sim/door.h"
#include "sim/metric_view.h"
#include "sim/prefix_cache.h"
#include "sim/replica_events.h"
#include "sim/report.h"
#include "sim/sim_orchestrator.h"
#include "sim/simulation.h"

namespace gpuscale::sim {
namespace {

// How long the approximate prefix index trusts that a replica still holds what it was sent.
// Its capacity (a replica's KV cache in blocks) bounds it under load; the ttl forgets prompts
// that a lightly loaded replica may keep but a busier one would long have evicted.
constexpr double kApproximateIndexTtlSeconds = 300;

class Engine {
 public:
  Engine(const SimulationConfig& config, const ReplicaModel& model,
         std::unique_ptr<scale::Policy> policy, const Trace& trace, const SimOptions& options,
         std::vector<VariantRuntime> variants)
      : config_(config),
        trace_(trace),
        options_(options),
        block_keys_(ChainAll(trace)),
        requests_(MakeRecords(trace, block_keys_, config.admission)),
        orchestrator_(config, model, requests_),
        view_(config.slo),
        family_(policy->Family()),
        controller_(std::make_unique<scale::OverridablePolicy>(std::move(policy)), orchestrator_,
                    scale::ControllerConfig{{config.service.drain_timeout}}),
        picker_(config.router) {
    orchestrator_.set_prefix_block_tokens(trace.hash_block_tokens);
    if (!variants.empty()) orchestrator_.SetVariants(std::move(variants));
    if (config.admission) door_.emplace(*config.admission, requests_);
    if (config.router.kind == route::PickerKind::kPrefixCache &&
        config.router.prefix_index == route::PrefixIndexMode::kApproximate &&
        trace.hash_block_tokens > 0) {
      approximate_.emplace(model.KvCacheTokens() / trace.hash_block_tokens,
                           kApproximateIndexTtlSeconds);
    }
  }

  SimResult Run();

 private:
  static std::vector<uint64_t> ChainAll(const Trace& trace);
  static std::vector<RequestRecord> MakeRecords(
      const Trace& trace, const std::vector<uint64_t>& block_keys,
      const std::optional<route::AdmissionConfig>& admission);
  void ForgetRemoved();
  void Arrive(uint32_t id, double now);
  bool TryRoute(uint32_t id, double now);
  void Route(uint32_t id, double now);
  void Schedule(int slot);
  bool PopReplicaEvent(double t);
  void OnTick(double now);
  void RecordRow(double now, const scale::ControllerTick& tick);
  void Finish(double end);
  void OnScrape(double now);
  void OnCrash(double now);
  void FlushRouterQueue(double now);
  bool InOutage(double now) const;
  double NextHeapTime();
  int64_t Outstanding() const {
    return static_cast<int64_t>(next_arrival_) - completed_ - orchestrator_.aborted() -
           (door_ ? door_->shed() : 0);
  }
  // Requests waiting for a replica: at the door, or at the router without one.
  int Queued() const { return static_cast<int>(door_ ? door_->Waiting() : router_queue_.size()); }

  const SimulationConfig& config_;
  const Trace& trace_;
  const SimOptions& options_;
  std::vector<uint64_t> block_keys_;  // chain keys of every request's blocks, in trace order
  std::vector<RequestRecord> requests_;
  SimOrchestrator orchestrator_;
  MetricView view_;
  std::string family_;
  scale::Controller controller_;
  ReplicaEvents replica_events_;
  std::deque<uint32_t> router_queue_;  // arrived while no replica was ready (no door)
  std::optional<SimDoor> door_;        // SimulationConfig::admission
  size_t next_arrival_ = 0;
  size_t next_crash_ = 0;
  route::Picker picker_;  // the gateway's picker: simulated and live routing are one code
  std::vector<route::Candidate> candidates_;  // reused per arrival
  // prefix_cache routing's approximate index (absent in precise mode or without hashes).
  std::optional<route::PrefixIndex> approximate_;
  int64_t completed_ = 0;
  int64_t events_ = 0;
  size_t arrivals_at_last_tick_ = 0;
  double last_tick_s_ = 0;
  int last_desired_ = -1;
  int peak_ = 0;
  SimResult result_;
};

std::vector<uint64_t> Engine::ChainAll(const Trace& trace) {
  std::vector<uint64_t> keys;
  keys.reserve(trace.hash_ids.size());
  for (const TraceRequest& r : trace.requests) PrefixCache::ChainKeys(trace.HashIds(r), &keys);
  return keys;
}

// Requests point into `block_keys` (ChainAll's layout: trace order, hash_count each).
std::vector<RequestRecord> Engine::MakeRecords(
    const Trace& trace, const std::vector<uint64_t>& block_keys,
    const std::optional<route::AdmissionConfig>& admission) {
  const route::Priority fallback =
      admission ? admission->default_priority : route::Priority::kStandard;
  std::vector<RequestRecord> records(trace.requests.size());
  size_t offset = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].block_keys =
        std::span<const uint64_t>(block_keys).subspan(offset, trace.requests[i].hash_count);
    offset += trace.requests[i].hash_count;
    records[i].arrival_s = trace.requests[i].arrival_s;
    records[i].input_tokens = std::max(trace.requests[i].input_tokens, 0);
    records[i].output_tokens = std::max(trace.requests[i].output_tokens, 1);
    records[i].priority = trace.requests[i].priority.value_or(fallback);
    records[i].tenant = trace.requests[i].tenant;
  }
  return records;
}

void Engine::Schedule(int slot) { replica_events_.Schedule(orchestrator_, slot); }

void Engine::Arrive(uint32_t id, double now) {
  if (!door_) return Route(id, now);
  door_->ExpireWaits(now);
  // Those already waiting go first (the gateway's Dispatch serves the queue as replicas free).
  if (door_->Waiting() == 0 && TryRoute(id, now)) return;
  // A critical request queued ahead of standard ones that wait for a slot may take a slot
  // reserved for it (admission.critical_reserved_per_replica) now, as the gateway's waiter
  // does when it looks for its grant (GatewayState::TakeGrant dispatches).
  if (door_->Enter(id, now)) FlushRouterQueue(now);
}

bool Engine::TryRoute(uint32_t id, double now) {
  const int best = PickReady(picker_, orchestrator_, candidates_, now, &requests_[id],
                             approximate_ ? &*approximate_ : nullptr,
                             door_ ? door_->max_in_flight(requests_[id].priority) : 0);
  if (best < 0) return false;
  auto& slots = orchestrator_.slots();
  requests_[id].on_fresh_replica = now - slots[best].warm_since < kFreshReplicaSeconds;
  if (door_) requests_[id].contended = door_->OthersWaiting(id);
  if (slots[best].engine->Enqueue(id, now)) Schedule(best);
  return true;
}

void Engine::Route(uint32_t id, double now) {
  if (!TryRoute(id, now)) router_queue_.push_back(id);
}

void Engine::FlushRouterQueue(double now) {
  if (door_) {
    door_->ExpireWaits(now);
    while (const std::optional<uint32_t> id = door_->Peek()) {
      if (!TryRoute(*id, now)) break;  // the head waits for a replica; so do those behind
      door_->Pop();
    }
    return;
  }
  while (!router_queue_.empty() && !orchestrator_.ready_slots().empty()) {
    uint32_t id = router_queue_.front();
    router_queue_.pop_front();
    Route(id, now);
  }
}

void Engine::ForgetRemoved() {
  for (int slot : orchestrator_.TakeRemoved()) {
    view_.Forget(slot);
    if (approximate_) approximate_->Forget(static_cast<uint64_t>(slot));
  }
}

double Engine::NextHeapTime() { return replica_events_.NextTime(orchestrator_); }

bool Engine::PopReplicaEvent(double t) {
  if (replica_events_.NextTime(orchestrator_) != t) return false;
  const ReplicaEvent e = replica_events_.Pop();
  auto& s = orchestrator_.slots()[e.slot];
  if (e.kind == 1) {
    orchestrator_.MarkReady(e.slot, t);
    FlushRouterQueue(t);
    return true;
  }
  const int64_t before = s.engine->completed();
  const int64_t prompt_before = s.engine->prompt_tokens();
  s.engine->FinishSegment(t);
  const int64_t finished = s.engine->completed() - before;
  completed_ += finished;
  Schedule(e.slot);
  orchestrator_.ReleaseIfPreemptedAndIdle(e.slot, t);
  ForgetRemoved();
  if (door_ && finished > 0) {
    door_->RecordCompletions(s.engine->prompt_tokens() - prompt_before, finished, t);
    FlushRouterQueue(t);  // a replica under its in-flight limit again
  }
  return true;
}

bool Engine::InOutage(double now) const {
  for (const auto& [from, to] : config_.faults.metrics_outages) {
    if (now >= from && now < to) return true;
  }
  return false;
}

void Engine::OnScrape(double now) {
  if (!InOutage(now)) ScrapeReplicas(now, orchestrator_, view_);
}

void Engine::OnCrash(double now) {
  ++next_crash_;
  const auto& ready = orchestrator_.ready_slots();
  if (ready.empty()) return;
  int slot = ready.front();  // the oldest ready replica
  orchestrator_.Crash(slot, now);
  ForgetRemoved();
  result_.errors.push_back(fmt::format("t={:.1f}: fault: replica {} crashed", now,
                                       orchestrator_.slots()[slot].id));
}

void Engine::OnTick(double now) {
  scale::ScalingInput input;
  if (InOutage(now)) {
    input.metrics_error = true;
    input.metric_errors.push_back("scrape failed: metrics endpoint unreachable (fault)");
  } else {
    ScrapeReplicas(now, orchestrator_, view_);
    view_.Fill(Seconds{now}, orchestrator_.ready_slots(), input);
  }
  // The gateway's activator queue, simulated: what arrived while no replica was ready.
  input.requests_waiting_without_replica = Queued();
  scale::ControllerTick tick = controller_.Tick(Seconds{now}, std::move(input));
  for (const auto& e : tick.errors) result_.errors.push_back(fmt::format("t={:.1f}: {}", now, e));
  result_.report.controller_errors += static_cast<int>(tick.errors.size());
  if (last_desired_ >= 0 && tick.desired_replicas > last_desired_) ++result_.report.scale_ups;
  if (last_desired_ >= 0 && tick.desired_replicas < last_desired_) ++result_.report.scale_downs;
  last_desired_ = tick.desired_replicas;
  for (int slot : orchestrator_.TakePlaced()) {
    replica_events_.ColdStart(now + config_.service.cold_start.count(), slot);
  }
  ForgetRemoved();
  orchestrator_.TakeResumed();
  FlushRouterQueue(now);
  peak_ = std::max(peak_, orchestrator_.PlacedReplicas());
  if (options_.record_timeline) RecordRow(now, tick);
}

void Engine::RecordRow(double now, const scale::ControllerTick& tick) {
  // Ticks come closer together while the fleet settles (NextTickSeconds).
  const double elapsed = now - last_tick_s_;
  const double rate =
      elapsed > 0 ? static_cast<double>(next_arrival_ - arrivals_at_last_tick_) / elapsed : 0;
  arrivals_at_last_tick_ = next_arrival_;
  last_tick_s_ = now;
  result_.timeline.push_back(MakeTimelineRow(now, rate, tick, orchestrator_, Queued()));
}

SimResult Engine::Run() {
  const int initial = config_.service.ReadyAtStart();
  for (int i = 0; i < initial; ++i) orchestrator_.StartWarm(0);
  peak_ = orchestrator_.PlacedReplicas();
  const size_t n = trace_.requests.size();
  const double last_arrival = n ? requests_[n - 1].arrival_s : 0;
  const double scrape = config_.scrape_interval.count();
  // One loop picks the earliest pending event of five sources; kept together so the
  // tie-breaking order (file comment) is visible in one place.
  std::vector<double> crashes = config_.faults.crash_at_seconds;
  std::sort(crashes.begin(), crashes.end());
  int64_t scrapes = 0;
  double next_tick = 0;
  double now = 0;
  while (next_arrival_ < n || Outstanding() > 0) {
    double t_heap = NextHeapTime();
    double t_crash = next_crash_ < crashes.size() ? crashes[next_crash_] : kInf;
    double t_tick = next_tick;
    double t_scrape = static_cast<double>(scrapes) * scrape;
    double t_arrival = next_arrival_ < n ? requests_[next_arrival_].arrival_s : kInf;
    double t = std::min({t_heap, t_crash, t_tick, t_scrape, t_arrival});
    if (const double t_preempt = orchestrator_.NextPreemptionTime(); t_preempt <= t) {
      // Spot notices and reclaims first among equal times: a notice drains the replica
      // before anything else routes to it.
      t = t_preempt;
      if (t > last_arrival + kTailSeconds) break;
      now = t;
      ++events_;
      orchestrator_.HandlePreemption(t);
      ForgetRemoved();
      continue;
    }
    if (t > last_arrival + kTailSeconds) break;
    now = t;
    ++events_;
    if (t_heap == t && PopReplicaEvent(t)) continue;
    if (t_crash == t) {
      OnCrash(t);
    } else if (t_tick == t) {
      if (t_scrape == t) ++scrapes;  // OnTick scrapes
      OnTick(t);
      next_tick = t + NextTickSeconds(config_.control_interval.count(), orchestrator_, Queued());
    } else if (t_scrape == t) {
      ++scrapes;
      OnScrape(t);
    } else {
      Arrive(static_cast<uint32_t>(next_arrival_++), t);
      if (options_.progress && (next_arrival_ & 0xFFFF) == 0) {
        options_.progress(static_cast<double>(next_arrival_) / static_cast<double>(n));
      }
    }
  }
  Finish(std::max(now, last_arrival));
  return std::move(result_);
}

void Engine::Finish(double end) {
  result_.report = SummarizeRequests(requests_, config_.slo, std::move(result_.report));
  auto& r = result_.report;
  if (door_) SummarizeClasses(requests_, config_.slo, trace_.tenants, r);
  r.policy = family_;
  r.duration_s = end;
  r.gpu_hours = orchestrator_.GpuSeconds(end) / 3600.0;
  const std::vector<VariantUsage> usage = orchestrator_.Usage(end);
  for (size_t i = 0; i < usage.size(); ++i) {
    const VariantRuntime& v = orchestrator_.variants()[i];
    const double hours = usage[i].gpu_seconds / 3600.0;
    r.variants.push_back({v.spec.name, v.spec.gpu_type, v.spec.spot, v.capacity, hours,
                          hours * v.spec.price_per_gpu_hour, usage[i].placed, usage[i].preempted,
                          usage[i].lost_to_preemption});
    r.preempted += usage[i].preempted;
    r.lost_to_preemption += usage[i].lost_to_preemption;
    r.cost += hours * v.spec.price_per_gpu_hour;
  }
  r.replicas_started = orchestrator_.started();
  r.replicas_stopped = orchestrator_.stopped();
  r.peak_replicas = peak_;
  r.aborted = orchestrator_.aborted();
  r.events = events_;
  if (options_.progress) options_.progress(1.0);
}

}  // namespace

Result<std::vector<VariantRuntime>> BuildVariants(
    const SimulationConfig& config, std::vector<std::unique_ptr<ReplicaModel>>& models) {
  std::vector<VariantRuntime> out;
  const auto& listed = config.service.fleet.variants;
  for (size_t i = 0; i < listed.size(); ++i) {
    auto model = MakeReplicaModel(VariantModelConfig(config.model, listed[i]));
    if (!model) {
      return InvalidArgument(model.error().message,
                             fmt::format("service.variants[{}].gpu_type", i));
    }
    const double capacity = listed[i].capacity_tokens_per_second > 0
                                ? listed[i].capacity_tokens_per_second
                                : ModelCapacity(**model, config.slo);
    models.push_back(std::move(*model));
    out.push_back({listed[i], models.back().get(), capacity});
  }
  // Relative to the first variant: the policy's replica.
  const double reference = out.empty() ? 1 : out.front().capacity;
  for (auto& v : out) v.capacity /= reference;
  SetLongPromptLimits(out, config.slo.ttft_seconds, config.service.fleet.long_prompt_ttft_share);
  return out;
}

Status ValidateSimulationConfig(const SimulationConfig& c) {
  if (c.cluster.nodes < 1) return InvalidArgument("must be >= 1", "cluster.nodes");
  if (c.cluster.gpus_per_node < 1) return InvalidArgument("must be >= 1", "cluster.gpus_per_node");
  if (static_cast<int64_t>(c.cluster.nodes) * c.cluster.gpus_per_node > kMaxSimulatedGpus) {
    return InvalidArgument(
        fmt::format("nodes x gpus_per_node = {} GPUs, over the {} one run simulates",
                    static_cast<int64_t>(c.cluster.nodes) * c.cluster.gpus_per_node,
                    kMaxSimulatedGpus),
        "cluster.nodes");
  }
  // Before the service's shape, which a config with variants copies from the first one.
  GS_RETURN_IF_ERROR(ValidateVariantPlan(c.service.fleet, c.cluster.gpus_per_node));
  if (c.service.gpus_per_replica < 1 || c.service.gpus_per_replica > c.cluster.gpus_per_node) {
    return InvalidArgument(fmt::format("must be in [1, cluster.gpus_per_node = {}]",
                                       c.cluster.gpus_per_node),
                           "service.gpus_per_replica");
  }
  if (c.service.min_replicas < 0 || c.service.max_replicas < c.service.min_replicas) {
    return InvalidArgument("need 0 <= min_replicas <= max_replicas", "service.min_replicas");
  }
  if (c.service.cold_start.count() < 0) {
    return InvalidArgument("must be >= 0", "service.cold_start_seconds");
  }
  if (!(c.control_interval.count() > 0)) {
    return InvalidArgument("must be > 0", "control_interval_seconds");
  }
  if (!(c.scrape_interval.count() > 0)) {
    return InvalidArgument("must be > 0", "scrape_interval_seconds");
  }
  if (!(c.slo.ttft_seconds > 0) || !(c.slo.tpot_seconds > 0)) {
    return InvalidArgument("SLO thresholds must be > 0", "slo");
  }
  if (!(c.slo.target_ratio > 0) || c.slo.target_ratio > 1) {
    return InvalidArgument("must be in (0, 1]", "slo.target_ratio");
  }
  return OkStatus();
}

Result<SimResult> RunSimulation(const SimulationConfig& config, const ReplicaModel& model,
                                std::unique_ptr<scale::Policy> policy, const Trace& trace,
                                const SimOptions& options) {
  GS_RETURN_IF_ERROR(ValidateSimulationConfig(config));
  if (config.service.initial_replicas == ServiceSpec::kAutoInitialReplicas) {
    return InvalidArgument("'auto' must be sized from the trace (sim::WarmStartReplicas) first",
                           "service.initial_replicas");
  }
  if (trace.requests.empty()) return InvalidArgument("the trace has no requests", "trace");
  if (!policy) return InvalidArgument("no policy given", "policy");
  // The clock steps through every scrape and control tick, busy or idle: a trace stretched
  // by a tiny --time-compress, or one stray timestamp years out, would run for days instead
  // of failing.
  const double span = trace.requests.back().arrival_s;
  const double ticks =
      span / std::min(config.scrape_interval.count(), config.control_interval.count());
  if (ticks > kMaxSimulatedTicks) {
    return InvalidArgument(
        fmt::format("the trace spans {:.0f} s, {:.3g} ticks of the {} s scrape / {} s control "
                    "interval, over the {:.0f} one run simulates: check its last timestamps, "
                    "--time-compress or the intervals",
                    span, ticks, config.scrape_interval.count(), config.control_interval.count(),
                    kMaxSimulatedTicks),
        "trace");
  }
  std::vector<std::unique_ptr<ReplicaModel>> models;
  GS_ASSIGN_OR_RETURN(std::vector<VariantRuntime> variants, BuildVariants(config, models));
  Engine engine(config, model, std::move(policy), trace, options, std::move(variants));
  return engine.Run();
}

}  // namespace gpuscale::sim
