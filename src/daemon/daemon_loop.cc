// Daemon: the control loop, persistence of each tick and shutdown (daemon.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "daemon/daemon.h"
#include "daemon/pool_ticks.h"
#include "daemon/replica_rows.h"
#include "orch/parallel.h"
#include "orch/process_util.h"
#include "scale/tick_interval.h"

namespace gpuscale::daemon {

using events::EventKind;

namespace {

std::vector<store::ReplicaRow> RowsOf(const std::string& service,
                                      const orch::ServiceOrchestrator& orch) {
  std::vector<store::ReplicaRow> rows;
  for (const orch::ReplicaRecord& r : orch.Records()) rows.push_back(ToReplicaRow(r, service));
  return rows;
}

std::string ActionText(const scale::ReplicaAction& a) {
  std::string text(scale::ActionKindName(a.kind));
  if (!a.replica_id.empty()) text += " " + a.replica_id;
  if (!a.reason.empty()) text += ": " + a.reason;
  return text;
}

}  // namespace

Daemon::~Daemon() {
  if (options_.gateway) options_.gateway->SetDemandListener({});
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  loop_cv_.NotifyAll();
  if (events_) events_->Stop();  // SSE readers waiting for events return now
  if (loop_.joinable()) loop_.join();
  ShutdownTasks();
  ledger_.SetReleaseListener({});  // it points at tasks_' manager, destroyed before ledger_
  if (monitor_) monitor_->Stop();
}

void Daemon::Log(std::string_view message) { options_.log(message); }

void Daemon::Run() {
  MutexLock lock(mu_);
  if (loop_.joinable() || stop_) return;
  loop_ = std::thread([this] { LoopMain(); });
  tasks_.Start();
}

void Daemon::LoopMain() {
  for (;;) {
    const auto started = std::chrono::steady_clock::now();
    try {
      Tick();
    } catch (const std::exception& e) {
      // Nothing below should throw; if a library does, the loop must survive it.
      Log(fmt::format("control tick failed: {}", e.what()));
    }
    const Seconds interval = LoopInterval();
    MutexLock lock(mu_);
    const auto next =
        started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
    loop_cv_.WaitUntil(mu_, next, [this]() GS_REQUIRES(mu_) { return stop_ || wake_; });
    if (stop_) return;
    wake_ = false;
  }
}

Seconds Daemon::LoopInterval() {
  Seconds interval;
  {
    MutexLock lock(mu_);  // a reload sets it
    interval = config_.loop_interval;
  }
  const bool waiting = options_.gateway && options_.gateway->TotalQueued() > 0;
  return scale::TickInterval(interval, waiting, settling_.load(), options_.probe_interval);
}

void Daemon::Wake() {
  {
    MutexLock lock(mu_);
    wake_ = true;
  }
  loop_cv_.NotifyAll();
}

void Daemon::OnChildExited() {
  if (orch::AnyWatchedExited()) Wake();
}

void Daemon::Shutdown(bool stop_replicas) {
  {
    MutexLock lock(mu_);
    if (shut_down_) return;
    shut_down_ = stop_ = true;
  }
  loop_cv_.NotifyAll();
  if (events_) events_->Stop();
  if (loop_.joinable()) loop_.join();
  // Experiment servers never outlive the daemon (experiments are not adopted); their leases
  // are released before the final PersistLeases below.
  ShutdownTasks();
  MutexLock loop_lock(loop_mu_);
  if (!stop_replicas) {
    // Said only when true: a start that fails (a busy port) may have started nothing.
    size_t left = 0;
    for (const auto& [name, slot] : services_) left += slot->orch->HasProcesses() ? 1 : 0;
    for (const auto& slot : retiring_) left += slot->orch->HasProcesses() ? 1 : 0;
    if (left > 0) {
      Log(fmt::format("leaving the replicas of {} service{} running for the next daemon to adopt",
                      left, left == 1 ? "" : "s"));
    }
    return;
  }
  const Seconds now = clock_.Now();
  for (auto& [name, slot] : services_) {
    slot->StopAll(now);
    retiring_.push_back(std::move(slot));
  }
  services_.clear();
  // stop_grace for SIGTERM, then SIGKILL and a little time for the kernel to reap.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            options_.stop_grace + Seconds{3});
  std::vector<store::EventRow> events;
  while (!retiring_.empty() && std::chrono::steady_clock::now() < deadline) {
    PollRetiring(clock_.Now(), events);
    if (!retiring_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  PersistLeases();
  events_->Append(events);
  if (!retiring_.empty()) Log("some replicas did not exit in time; they are left to adoption");
  monitor_->Stop();
}

// Stops running experiments (their servers exit, their leases are released); queued ones
// stay queued in the store for the next daemon. Then writes the lease table: Shutdown(false)
// returns without the final PersistLeases (replicas keep theirs), and the experiments'
// released leases must not linger there until the next start drops them as stale.
// Idempotent. REQUIRES: loop_mu_ not held (taken here, as ticks persist leases too).
void Daemon::ShutdownTasks() {
  if (!tasks_.Shutdown()) return;
  MutexLock loop_lock(loop_mu_);
  PersistLeases();
}

void Daemon::PollRetiring(Seconds now, std::vector<store::EventRow>& events) {
  for (auto it = retiring_.begin(); it != retiring_.end();) {
    ServiceSlot& slot = **it;
    slot.orch->Poll(now);
    for (orch::OrchestratorEvent& e : slot.orch->TakeEvents()) {
      events.push_back(state::MakeEvent(e.at, slot.name, e.kind, e.replica, e.message));
    }
    // Retiring rows stay persisted until the processes are gone, so a crash meanwhile still
    // lets the next daemon finish the stop; a live service of the same name owns the rows
    // again once it exists (creation waits for the retirement: ApplySpec).
    PersistReplicas(slot.name, *slot.orch);
    if (slot.orch->HasProcesses()) {
      ++it;
      continue;
    }
    if (slot.deleting) {  // a re-created service's row is spared (FinishDeleting)
      if (Status s = store_->services().FinishDeleting(slot.name); !s) {
        store_health_.Failed("deleting service " + slot.name, s.error());
      }
    }
    state_->Forget(slot.name);
    if (slot.deleting) history_.Forget(slot.name);
    it = retiring_.erase(it);
  }
}

void Daemon::PersistReplicas(const std::string& service, const orch::ServiceOrchestrator& orch) {
  state_->WriteReplicas(service, RowsOf(service, orch), clock_.Now());
}

void Daemon::PersistLeases() {
  std::vector<store::LeaseRow> rows;
  for (const alloc::Lease& lease : ledger_.Leases()) rows.push_back(ToLeaseRow(lease));
  state_->WriteLeases(std::move(rows));
}

void Daemon::TrimHistory(Seconds now) {
  Result<state::HistoryRetention::Trimmed> trimmed = retention_->Run(config_.retention, now);
  if (!trimmed) {
    // Tried again in a minute (HistoryRetention), so this is logged at most once a minute.
    Log(fmt::format("history retention failed: {}", trimmed.error().ToString()));
    return;
  }
  if (!trimmed->stuck.empty()) Log(fmt::format("warning: {}", trimmed->stuck));
  if (trimmed->by_age == 0 && trimmed->by_size == 0) return;
  MutexLock lock(mu_);
  metrics_.AddHistoryDeleted(trimmed->by_age, trimmed->by_size);
}

void Daemon::PersistDecision(const ServiceSlot& slot, const ServiceTickResult& result,
                             Seconds now) {
  const scale::ControllerTick& t = result.tick;
  store::DecisionRow row;
  row.service = slot.name;
  row.at = now;
  row.policy = slot.PolicyFamily();
  row.current_replicas = t.current_replicas;
  row.ready_replicas = t.ready_replicas;
  row.desired_replicas = t.desired_replicas;
  row.reason = t.decision.reason;
  row.details = t.decision.details;
  for (const scale::ReplicaAction& a : t.actions) row.actions.push_back(ActionText(a));
  state_->WriteDecision(row, result.desired_changed || !t.actions.empty());
}

void Daemon::PublishEvents(std::vector<store::EventRow> events) { events_->Append(events); }

void Daemon::RecordHistory(const std::string& service, const ServiceTickResult& result,
                           Seconds now) {
  HistorySample sample;
  sample.at = now;
  sample.desired = result.tick.desired_replicas;
  sample.ready = result.tick.ready_replicas;
  sample.current = result.tick.current_replicas;
  sample.inputs = result.tick.decision.inputs;
  // As in the API's view: no figures before the service's first request via the gateway.
  if (result.gateway && result.gateway->HasTraffic()) sample.gateway = result.gateway;
  history_.Record(service, sample);
}

// Every service's scrapes and queries; what has not answered by the cutoff (a share of the
// loop interval) is carried over to a later tick.
TickObservations Daemon::Collect(Seconds now) {
  const auto cutoff = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          LoopInterval() * config_.scrape.cutoff_ratio);
  return collector_.Collect(services_, now, config_, cutoff);
}

// Events of one service tick: a changed desired count, failed actions, and metric errors
// as MetricErrorEvents damps them (a spell of errors is an event at each end).
void Daemon::TickEvents(ServiceSlot& slot, const ServiceTickResult& result, Seconds now,
                        std::vector<store::EventRow>& events) {
  const scale::ControllerTick& t = result.tick;
  if (result.desired_changed) {
    events.push_back(state::MakeEvent(now, slot.name, EventKind::kDecision, "",
                                      fmt::format("desired {} -> {}: {}", t.current_replicas,
                                                  t.desired_replicas, t.decision.reason)));
  }
  for (const std::string& error : t.errors) {
    events.push_back(state::MakeEvent(now, slot.name, EventKind::kActionFailed, "", error));
  }
  if (auto event = slot.metric_events.Observe(result.metric_errors, now)) {
    events.push_back(state::MakeEvent(now, slot.name, event->kind, "", std::move(event->message)));
  }
}

void Daemon::TickService(ServiceSlot& slot, Seconds now, TickObservations& observed,
                         const gpu::GpuSnapshot* gpus, std::vector<store::EventRow>& events) {
  TickObservations::Range& range = observed.ranges[slot.name];
  // One observation per runtime (a disaggregated service's pools each see their replicas).
  std::vector<ServiceObservation> obs(slot.runtimes.size());
  for (size_t i = range.scrape_begin; i < range.scrape_end; ++i) {
    const orch::ReplicaInfo& info = range.replicas[i - range.scrape_begin];
    metrics::ScrapeJob& scrape = observed.scrapes[i];
    obs[slot.RuntimeIndexOf(info.id)].replicas.push_back({info.id, info.gpus,
                                                          info.phase == scale::ReplicaPhase::kReady,
                                                          std::move(scrape.result), scrape.kind});
  }
  for (size_t i = range.query_begin; i < range.query_end; ++i) {
    const size_t q = i - range.query_begin;
    obs[range.prom_runtime[q]].queries.push_back(
        {range.prom[q].key, std::move(observed.queries[i].result)});
  }
  orch::ServiceOrchestrator& orch = *slot.orch;
  gateway::GatewayState* gw = options_.gateway.get();
  if (gw != nullptr) {
    // A waiting request needs every pool (prefill, then decode): each gets the activator's
    // replica. The gateway's figures go to the last runtime (a pool's policy reads its
    // replicas' histograms: PoolServiceConfig).
    for (ServiceObservation& o : obs) o.gateway_waiting = gw->Queued(slot.name);
    obs.back().gateway = gw->StatsOf(slot.name);
  }
  // A drain ends when neither the replica (its scraped vLLM gauges) nor the gateway (its
  // exact count) has a request in flight: requests sent around the gateway count too.
  const OutstandingSink sink = [&orch, gw](const std::string& id, int outstanding) {
    if (outstanding == kNotScraped && gw == nullptr) return;  // the last scraped count stands
    if (gw != nullptr) outstanding = std::max(outstanding, gw->InFlight(id));
    // Its only error is an id the orchestrator no longer holds (the replica left since it was
    // observed): then there is no drain to finish.
    (void)orch.ReportOutstanding(id, outstanding);
  };
  std::vector<PoolTick> pools;
  for (size_t i = 0; i < slot.runtimes.size(); ++i) {
    pools.push_back(
        {kPoolRoles[std::min<size_t>(i, 1)], &slot.runtimes[i]->Tick(now, obs[i], gpus, sink)});
  }
  if (slot.pooled != nullptr) slot.combined = CombinePoolTicks(pools);
  const ServiceTickResult& result = slot.pooled != nullptr ? *slot.combined : *pools[0].result;
  TickEvents(slot, result, now, events);
  for (orch::OrchestratorEvent& e : orch.TakeEvents()) {
    events.push_back(state::MakeEvent(e.at, slot.name, e.kind, e.replica, e.message));
  }
  PersistReplicas(slot.name, orch);
  PersistDecision(slot, result, now);
  RecordHistory(slot.name, result, now);
  MutexLock lock(mu_);
  metrics_.AddDecision(slot.name);
  if (result.scrape_errors > 0) metrics_.AddScrapeErrors(slot.name, result.scrape_errors);
}

// Every service's readiness and health probes at once (each orchestrator's own are
// concurrent too): a tick waits about one probe timeout for hung replicas, however many
// services have one. Only the probes run here; Poll applies the results in service order.
void Daemon::PrepareProbes(Seconds now) {
  std::vector<orch::ServiceOrchestrator*> orchestrators;
  for (auto& [name, slot] : services_) orchestrators.push_back(slot->orch.get());
  if (orchestrators.size() < 2) return;  // Poll probes by itself
  orch::ParallelFor(orchestrators.size(), options_.collector_threads,
                    [&](size_t i) { orchestrators[i]->PrepareProbes(now); });
}

// One control tick; see daemon.h for the steps. Longer than 40 lines would be: the steps
// are each one call, kept in one place so the order is visible.
void Daemon::Tick() {
  MutexLock loop_lock(loop_mu_);
  const auto started = std::chrono::steady_clock::now();
  // Where the tick's time goes, for gpuscale_control_loop_phase_seconds_total.
  std::vector<std::pair<const char*, double>> phases;
  auto phase_start = started;
  auto end_phase = [&](const char* phase) {
    const auto t = std::chrono::steady_clock::now();
    phases.emplace_back(phase, std::chrono::duration<double>(t - phase_start).count());
    phase_start = t;
  };
  const Seconds now = clock_.Now();
  std::vector<store::EventRow> events;
  Reconcile(now, events);
  ApplyPreempts(now, events);
  PrepareProbes(now);
  for (auto& [name, slot] : services_) slot->orch->Poll(now);
  PollRetiring(now, events);
  end_phase("probe");
  Result<gpu::GpuSnapshot> gpus = monitor_->Snapshot();
  const gpu::GpuSnapshot* snapshot = gpus ? &*gpus : nullptr;
  TickObservations observed = Collect(now);
  collector_.PostGpuLoad(observed, gpu_load_.get());
  end_phase("collect");
  for (auto& [name, slot] : services_) TickService(*slot, now, observed, snapshot, events);
  end_phase("services");
  PersistLeases();
  events_->Append(events);
  ProbeStore();
  TrimHistory(now);
  end_phase("persist");
  if (memory_trim_.Run(now)) end_phase("trim");  // once a minute
  ++tick_count_;
  PublishViews(now);
  PublishRoutes(now);
  end_phase("publish");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const size_t queries_in_flight = collector_.queries_in_flight();  // its own lock, not under mu_
  MutexLock lock(mu_);
  metrics_.ObserveLoop(seconds);
  metrics_.set_scrapes(collector_.scrapes().ended(), collector_.scrapes().in_flight());
  metrics_.set_prom_queries_in_flight(queries_in_flight);
  for (const auto& [phase, phase_seconds] : phases) metrics_.AddLoopPhase(phase, phase_seconds);
  first_tick_done_ = true;
}

// Copies what the API shows into mu_-guarded snapshots. A desired service whose spec is not
// applied yet keeps the view the API request set (ShowUnapplied).
void Daemon::PublishViews(Seconds now) {
  std::map<std::string, ServiceView> views;
  std::map<std::string, std::vector<orch::ReplicaInfo>> replicas;
  bool settling = false;
  for (auto& [name, slot] : services_) {
    views[name] = slot->View();
    replicas[name] = slot->orch->Replicas(now);
    if (auto line = slot->start_failure.Observe(name, replicas[name])) Log(*line);
    views[name].failure = slot->start_failure.failure();
    for (const orch::ReplicaInfo& r : replicas[name]) {
      settling = settling || orch::IsSettling(r.state);
    }
  }
  settling_ = settling;
  MutexLock lock(mu_);
  ShowUnapplied(views);
  // Swapped, not assigned: the old views are freed with these locals, after `lock` (declared
  // after them) is released, not while API threads wait for it.
  std::swap(views_, views);
  std::swap(replicas_, replicas);
  views_list_.reset();
}

void Daemon::PublishRoutes(Seconds now) {
  if (!options_.gateway) return;
  std::vector<gateway::ServiceRoute> routes;
  for (auto& [name, slot] : services_) routes.push_back(slot->Route(now, config_.state_dir));
  options_.gateway->Publish(std::move(routes));
}

// The desired services as this tick reconciles them (a reload sets the loop interval, the
// first retry's wait, under mu_ too).
std::vector<WantedService> Daemon::Wanted(Seconds& retry_initial) {
  MutexLock lock(mu_);
  retry_initial = config_.loop_interval;
  std::vector<WantedService> wants;
  wants.reserve(desired_.size());
  for (const auto& [name, d] : desired_) {
    WantedService w{name,     d.incarnation, d.spec_generation, d.rules_generation,
                    d.manual, std::nullopt};
    auto it = services_.find(name);
    // Copied only when it must be applied: the loop reconciles every service every tick.
    if (it == services_.end() || it->second->incarnation != d.incarnation ||
        it->second->spec_generation != d.spec_generation) {
      w.config = d.config;
    }
    wants.push_back(std::move(w));
  }
  return wants;
}

void Daemon::Reconcile(Seconds now, std::vector<store::EventRow>& events) {
  Seconds retry_initial{0};
  std::vector<WantedService> wants = Wanted(retry_initial);
  const std::vector<std::string> deleted =
      reconciler_->Run(std::move(wants), services_, retiring_, now, retry_initial, events);
  if (deleted.empty()) return;
  MutexLock lock(mu_);
  for (const std::string& service : deleted) metrics_.ForgetService(service);
}

void Daemon::ShowUnapplied(std::map<std::string, ServiceView>& views) {
  std::erase_if(views,
                [&](const auto& v) GS_REQUIRES(mu_) { return desired_.count(v.first) == 0; });
  for (const auto& [name, d] : desired_) {
    auto api = views_.find(name);  // what the API request that wrote `d` showed
    auto slot = services_.find(name);
    const bool running = slot != services_.end() && slot->second->incarnation == d.incarnation;
    if (!running) {
      if (api != views_.end()) views[name] = api->second;
    } else if (slot->second->spec_generation != d.spec_generation && api != views_.end()) {
      // The replicas of the spec now running, under the spec asked for.
      ServiceView& view = views[name];
      view.config = api->second.config;
      view.spec_yaml = api->second.spec_yaml;
      view.policy_family = api->second.policy_family;
    }
    auto view = views.find(name);
    if (view == views.end()) continue;
    view->second.manual_replicas = d.manual;  // set by the API, applied by the next tick
    if (auto failure = reconciler_->FailureOf(name)) view->second.apply_failure = *failure;
  }
}

void Daemon::ApplyPreempts(Seconds now, std::vector<store::EventRow>& events) {
  std::vector<PreemptNotice> notices;
  {
    MutexLock lock(mu_);
    notices.swap(pending_preempts_);
  }
  for (const PreemptNotice& n : notices) {
    auto it = services_.find(n.service);
    Status applied = it == services_.end() || it->second->variants == nullptr
                         ? NotFound("the service is gone or lists no variants now")
                         : it->second->variants->Preempt(n.replica, n.notice, now);
    if (!applied) {
      events.push_back(state::MakeEvent(now, n.service, events::EventKind::kActionFailed, n.replica,
                                        "spot notice not applied: " + applied.error().ToString()));
    }
  }
}

}  // namespace gpuscale::daemon
