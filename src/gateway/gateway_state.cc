#include "gateway/gateway_state.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string_view>

#include "metrics/exposition_writer.h"

namespace gpuscale::gateway {

GatewayState::GatewayState(GatewayConfig config)
    : config_(std::move(config)),
      prefix_cache_(config_.picker.prefix_index, config_.prefix_cache),
      tenant_limits_(config_.admission.tenant_tokens_per_minute) {}

route::AdmissionQueue& GatewayState::QueueOf(Service& s, RoutePool pool) {
  // Unbounded here: EnterQueue bounds the service's waiters (queue_size) over both pools.
  return s.queues.try_emplace(pool, SIZE_MAX).first->second;
}

double GatewayState::SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<GatewayState::Replica> GatewayState::Replicas(std::vector<ReplicaRoute>& routes,
                                                          double now) {
  std::vector<Replica> replicas;
  for (ReplicaRoute& r : routes) {
    Replica replica;
    replica.ready_since = now - r.ready_age_seconds;
    replica.identity = route::HashText(r.id);
    replica.route = std::move(r);
    replicas.push_back(std::move(replica));
  }
  return replicas;
}

std::vector<const GatewayState::Replica*> GatewayState::AllReplicas(const Service& s) {
  std::vector<const Replica*> all;
  for (const Replica& r : s.replicas) all.push_back(&r);
  for (const Replica& r : s.prefill) all.push_back(&r);
  return all;
}

void GatewayState::Publish(std::vector<ServiceRoute> services) {
  const double now = SteadyNow();
  std::vector<std::function<void()>> to_wake;
  std::function<void(std::map<std::string, std::string>)> kv_listener;
  {
    MutexLock lock(mu_);
    std::map<std::string, Service> next;
    model_to_service_.clear();
    for (ServiceRoute& route : services) {
      Service& s = next[route.name];
      if (auto old = services_.find(route.name); old != services_.end()) {
        s.waiters = std::move(old->second.waiters);
        s.queues = std::move(old->second.queues);
      }
      s.models = route.models;
      for (const std::string& model : route.models) model_to_service_.emplace(model, route.name);
      s.replicas = Replicas(route.replicas, now);
      s.disaggregated = route.disaggregated;
      if (route.disaggregated) s.prefill = Replicas(route.prefill_replicas, now);
      s.unavailable_reason = route.unavailable_reason;
    }
    // Waiters of a service that disappeared are woken too: they find no service and fail.
    for (auto& [name, old] : services_) {
      if (next.count(name)) continue;
      for (auto& [id, w] : old.waiters) to_wake.push_back(w.wake);
    }
    services_ = std::move(next);
    // Waiters of a service that cannot start are woken to be told so; the others get the
    // replicas that are free now.
    for (auto& [name, s] : services_) {
      if (s.unavailable_reason.empty()) {
        Dispatch(name, s, now, to_wake);
      } else {
        for (auto& [id, w] : s.waiters) to_wake.push_back(w.wake);
      }
    }
    // Forget the health of replicas that are gone (ids are never reused). A set of the live
    // ids keeps this O(n log n) for fleets of thousands of replicas.
    std::set<std::string_view> live;
    for (const auto& [name, s] : services_) {
      for (const Replica* r : AllReplicas(s)) live.insert(r->route.id);
    }
    std::erase_if(health_, [&](const auto& entry) { return !live.contains(entry.first); });
    // Probe state: the flag a relay in flight holds is shared, so dropping the entry of a
    // replica that left does not touch those relays. One the checks gave up stays down while
    // unpublished (the daemon unpublishes a replica its own probe fails): published again,
    // it takes requests once a check passes, and the terminal hears it is back. At most
    // kRememberedDown such entries are kept for replicas that never return.
    constexpr size_t kRememberedDown = 1024;
    std::erase_if(probes_, [&](const auto& entry) GS_REQUIRES(mu_) {
      return !live.contains(entry.first) &&
             (!entry.second.down->load() || probes_.size() > live.size() + kRememberedDown);
    });
    for (std::string_view id : live) probes_.try_emplace(std::string(id));
    // A replica that left takes only its own entries with it.
    if (config_.picker.kind == route::PickerKind::kPrefixCache) {
      prefix_cache_.Retain({live.begin(), live.end()});
    }
    if (UpdateKvEndpoints()) kv_listener = kv_endpoints_listener_;
  }
  if (kv_listener) kv_listener(KvEventEndpoints());
  for (auto& wake : to_wake) wake();
}

bool GatewayState::UpdateKvEndpoints() {
  std::map<std::string, std::string> endpoints;
  for (const auto& [name, s] : services_) {
    for (const Replica* r : AllReplicas(s)) {
      if (!r->route.kv_events_endpoint.empty())
        endpoints[r->route.id] = r->route.kv_events_endpoint;
    }
  }
  if (endpoints == kv_endpoints_) return false;
  kv_endpoints_ = std::move(endpoints);
  return true;
}

std::map<std::string, std::string> GatewayState::KvEventEndpoints() const {
  MutexLock lock(mu_);
  return kv_endpoints_;
}

void GatewayState::SetKvEndpointsListener(
    std::function<void(std::map<std::string, std::string>)> listener) {
  MutexLock lock(mu_);
  kv_endpoints_listener_ = std::move(listener);
}

int GatewayState::InFlight(const std::string& replica) const {
  MutexLock lock(mu_);
  auto it = in_flight_.find(replica);
  return it == in_flight_.end() ? 0 : it->second.count;
}

namespace {

template <typename Queues>
int QueuedIn(const Queues& queues) {
  size_t n = 0;
  for (const auto& [pool, q] : queues) n += q.Size();
  return static_cast<int>(n);
}

}  // namespace

int GatewayState::Queued(const std::string& service) const {
  MutexLock lock(mu_);
  auto it = services_.find(service);
  return it == services_.end() ? 0 : QueuedIn(it->second.queues);
}

int GatewayState::TotalQueued() const {
  MutexLock lock(mu_);
  int total = 0;
  for (const auto& [name, s] : services_) total += QueuedIn(s.queues);
  return total;
}

void GatewayState::SetDemandListener(std::function<void(const std::string&)> listener) {
  MutexLock lock(mu_);
  demand_listener_ = std::move(listener);
}

std::string GatewayState::MetricsText() const {
  MutexLock lock(mu_);
  std::map<std::pair<std::string, std::string>, int> in_flight;
  std::map<std::string, int> queued;
  std::map<std::pair<std::string, std::string>, int> by_priority;
  for (const auto& [name, s] : services_) {
    queued[name] = QueuedIn(s.queues);
    for (route::Priority p :
         {route::Priority::kCritical, route::Priority::kStandard, route::Priority::kSheddable}) {
      int& n = by_priority[{name, std::string(route::PriorityName(p))}];
      for (const auto& [pool, q] : s.queues) n += static_cast<int>(q.Size(p));
    }
    for (const Replica* r : AllReplicas(s)) in_flight[{name, r->route.id}] = 0;
  }
  // Every replica with requests in flight, published or not (one that left the table while
  // requests are stuck on it still shows them).
  for (const auto& [replica, flight] : in_flight_) {
    in_flight[{flight.service, replica}] = flight.count;
  }
  std::string text;
  {
    MutexLock stats_lock(stats_mu_);
    text = stats_.Text(in_flight, queued, by_priority);
  }
  if (config_.picker.kind == route::PickerKind::kPrefixCache) {
    metrics::ExpositionWriter w;
    prefix_cache_.WriteMetrics(w);
    text += w.Take();
  }
  return text;
}

std::optional<ServiceStatsView> GatewayState::StatsOf(const std::string& service) const {
  MutexLock lock(mu_);
  auto it = services_.find(service);
  if (it == services_.end()) return std::nullopt;
  std::optional<ServiceStatsView> view;
  {
    MutexLock stats_lock(stats_mu_);
    view = stats_.View(service);
  }
  view->queued = QueuedIn(it->second.queues);
  for (const Replica* r : AllReplicas(it->second)) {
    if (auto f = in_flight_.find(r->route.id); f != in_flight_.end()) {
      view->in_flight += f->second.count;
    }
  }
  return view;
}

std::optional<std::string> GatewayState::ServiceOf(const std::string& model) const {
  MutexLock lock(mu_);
  auto it = model_to_service_.find(model);
  if (it == model_to_service_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> GatewayState::Models() const {
  MutexLock lock(mu_);
  return {model_to_service_.begin(), model_to_service_.end()};
}

bool GatewayState::Disaggregated(const std::string& service) const {
  MutexLock lock(mu_);
  auto it = services_.find(service);
  return it != services_.end() && it->second.disaggregated;
}

std::string GatewayState::UnavailableReason(const std::string& service) const {
  MutexLock lock(mu_);
  auto it = services_.find(service);
  return it != services_.end() ? it->second.unavailable_reason : std::string();
}

std::optional<Ticket> GatewayState::Acquire(const std::string& service, const RouteKey& key,
                                            const std::set<std::string>& exclude, RoutePool pool,
                                            route::Priority priority) {
  const double now = SteadyNow();
  MutexLock lock(mu_);
  return AcquireLocked(service, key, exclude, pool, priority, now);
}

std::optional<Ticket> GatewayState::Admit(const std::string& service, const RouteKey& key,
                                          RoutePool pool, double tokens, route::Priority priority) {
  const double now = SteadyNow();
  MutexLock lock(mu_);
  auto it = services_.find(service);
  if (it == services_.end()) return std::nullopt;
  if (auto q = it->second.queues.find(pool); q != it->second.queues.end() && !q->second.Empty()) {
    return std::nullopt;
  }
  std::optional<Ticket> ticket = AcquireLocked(service, key, {}, pool, priority, now);
  if (ticket) ticket->tokens = tokens;
  return ticket;
}

std::optional<Ticket> GatewayState::AcquireLocked(const std::string& service, const RouteKey& key,
                                                  const std::set<std::string>& exclude,
                                                  RoutePool pool, route::Priority priority,
                                                  double now) {
  auto it = services_.find(service);
  if (it == services_.end()) return std::nullopt;
  const int limit = route::SlotLimit(config_.admission, priority);
  std::vector<route::Candidate> candidates;
  std::vector<const Replica*> eligible;
  const bool prefill = pool == RoutePool::kPrefill;
  for (const Replica& r : prefill ? it->second.prefill : it->second.replicas) {
    if (exclude.count(r.route.id)) continue;
    if (auto h = health_.find(r.route.id); h != health_.end() && h->second.ejected_until > now) {
      continue;
    }
    if (auto p = probes_.find(r.route.id); p != probes_.end() && p->second.down->load()) {
      continue;
    }
    auto f = in_flight_.find(r.route.id);
    const int outstanding = f == in_flight_.end() ? 0 : f->second.count;
    if (limit > 0 && outstanding >= limit) continue;  // saturated: the request waits
    candidates.push_back(
        {.outstanding = outstanding,
         .ready_since = r.ready_since,
         .identity = r.identity,
         .pending_prefill_tokens = f == in_flight_.end() ? 0 : f->second.prefill_tokens,
         .capacity_weight = r.route.capacity_weight});
    eligible.push_back(&r);
  }
  const bool by_cache = config_.picker.kind == route::PickerKind::kPrefixCache;
  if (by_cache) prefix_cache_.Fill(candidates, key, now);
  auto [picker, inserted] = pickers_.try_emplace({service, pool}, config_.picker);
  const std::optional<size_t> chosen =
      picker->second.Pick(candidates, now, key.prefix_key, key.prompt_tokens);
  if (!chosen) return std::nullopt;
  const Replica& r = *eligible[*chosen];
  Ticket ticket{service,
                r.route.id,
                r.route.host,
                r.route.port,
                probes_.try_emplace(r.route.id).first->second.down,
                pool};
  ticket.priority = priority;
  if (by_cache) {
    prefix_cache_.Routed(r.identity, key, now);
    ticket.prefill_tokens =
        std::max<int64_t>(key.prompt_tokens - candidates[*chosen].cached_tokens, 0);
  }
  Flight& flight = in_flight_[r.route.id];
  flight.service = service;
  ++flight.count;
  flight.prefill_tokens += ticket.prefill_tokens;
  return ticket;
}

void GatewayState::EndFlight(const Ticket& ticket) {
  if (auto it = in_flight_.find(ticket.replica); it != in_flight_.end()) {
    it->second.prefill_tokens -= ticket.prefill_tokens;
    if (--it->second.count <= 0) in_flight_.erase(it);
  }
}

void GatewayState::Dispatch(const std::string& name, Service& s, double now,
                            std::vector<std::function<void()>>& to_wake) {
  for (auto& [pool, queue] : s.queues) {
    while (const route::AdmissionRequest* head = queue.Peek()) {
      Waiter& w = s.waiters.at(head->id);
      std::optional<Ticket> ticket = AcquireLocked(name, w.key, {}, pool, w.priority, now);
      if (!ticket) break;  // the head waits for the next free replica; so do those behind
      ticket->tokens = w.tokens;
      w.grant = std::move(ticket);
      queue.Pop();
      to_wake.push_back(w.wake);
    }
  }
}

void GatewayState::Release(const Ticket& ticket, AttemptOutcome outcome) {
  const double now = SteadyNow();
  std::vector<std::function<void()>> to_wake;
  {
    MutexLock lock(mu_);
    EndFlight(ticket);
    if (outcome != AttemptOutcome::kTransportFailure) {
      // kOk clears the replica's failures; kAbandoned (the client left) says nothing of it.
      if (outcome == AttemptOutcome::kOk) health_.erase(ticket.replica);
    } else {
      Eject(ticket.replica, now);
    }
    if (auto it = services_.find(ticket.service); it != services_.end()) {
      if (outcome == AttemptOutcome::kOk && ticket.tokens > 0) {
        QueueOf(it->second, ticket.pool).RecordCompletion(ticket.tokens, now);
      }
      Dispatch(ticket.service, it->second, now, to_wake);
    }
  }
  for (auto& wake : to_wake) wake();
}

void GatewayState::Eject(const std::string& replica, double now) {
  Health& h = health_[replica];
  if (++h.consecutive_failures < config_.eject_after_failures) return;
  // Ejected; after the ejection the next request is a trial: one more failure ejects again
  // for twice as long (up to 8x), a success clears the record.
  const int factor = 1 << std::min(h.ejections, 3);
  h.ejected_until = now + config_.ejection.count() * factor;
  ++h.ejections;
  h.consecutive_failures = config_.eject_after_failures - 1;
}

std::vector<ProbeTarget> GatewayState::ProbeTargets() const {
  MutexLock lock(mu_);
  std::vector<ProbeTarget> targets;
  for (const auto& [name, s] : services_) {
    for (const Replica* r : AllReplicas(s)) {
      targets.push_back({r->route.id, r->route.host, r->route.port});
    }
  }
  return targets;
}

void GatewayState::SetProbeListener(
    std::function<void(const std::string& replica, bool down)> listener) {
  MutexLock lock(mu_);
  probe_listener_ = std::move(listener);
}

void GatewayState::ReportProbe(const std::string& replica, bool passed) {
  std::vector<std::function<void()>> to_wake;
  std::function<void(const std::string&, bool)> listener;
  {
    MutexLock lock(mu_);
    auto p = probes_.find(replica);
    if (p == probes_.end()) return;  // left the route table meanwhile
    Probe& probe = p->second;
    if (!passed) {
      if (++probe.failures < config_.health_check_failures || probe.down->exchange(true)) return;
    } else {
      probe.failures = 0;
      if (!probe.down->exchange(false)) return;
      // Back in rotation: its service's waiting requests may go now.
      const double now = SteadyNow();
      for (auto& [name, s] : services_) {
        for (const Replica* r : AllReplicas(s)) {
          if (r->route.id == replica) Dispatch(name, s, now, to_wake);
        }
      }
    }
    listener = probe_listener_;
  }
  if (listener) listener(replica, !passed);
  for (auto& wake : to_wake) wake();
}

bool GatewayState::Down(const std::string& replica) const {
  MutexLock lock(mu_);
  auto p = probes_.find(replica);
  return p != probes_.end() && p->second.down->load();
}

route::Admission GatewayState::EnterQueue(const std::string& service, const WaitRequest& request,
                                          std::function<void()> wake) {
  const double now = SteadyNow();
  std::function<void(const std::string&)> listener;
  route::Admission admission;
  {
    MutexLock lock(mu_);
    Service& s = services_[service];
    if (static_cast<int>(s.waiters.size()) >= config_.queue_size) {
      return {route::AdmissionVerdict::kFull, 0};
    }
    admission = QueueOf(s, request.pool)
                    .Enter({request.id, request.priority, request.tenant, request.tokens,
                            request.max_wait_seconds},
                           now);
    if (admission.verdict != route::AdmissionVerdict::kQueued) return admission;
    // The first waiter starts a tick; while any waits the loop ticks every second anyway
    // (Daemon::LoopInterval), and a tick per queued request kept it ticking back to back
    // through a cold start (239 ticks in 13 s at 50 req/s).
    if (s.waiters.empty()) listener = demand_listener_;
    s.waiters.emplace(
        request.id,
        Waiter{std::move(wake), request.pool, request.key, request.tokens, request.priority, {}});
  }
  if (listener) listener(service);
  return admission;
}

bool GatewayState::EnterQueue(const std::string& service, uint64_t waiter,
                              std::function<void()> wake) {
  return EnterQueue(service, WaitRequest{.id = waiter}, std::move(wake)).verdict ==
         route::AdmissionVerdict::kQueued;
}

std::optional<Ticket> GatewayState::TakeGrant(const std::string& service, uint64_t waiter) {
  const double now = SteadyNow();
  std::vector<std::function<void()>> to_wake;
  std::optional<Ticket> ticket;
  {
    MutexLock lock(mu_);
    auto it = services_.find(service);
    if (it == services_.end()) return std::nullopt;
    Service& s = it->second;
    if (s.unavailable_reason.empty()) Dispatch(service, s, now, to_wake);
    auto w = s.waiters.find(waiter);
    if (w != s.waiters.end() && w->second.grant) {
      ticket = std::move(w->second.grant);
      s.waiters.erase(w);
    }
  }
  for (auto& wake : to_wake) wake();
  return ticket;
}

void GatewayState::LeaveQueue(const std::string& service, uint64_t waiter) {
  const double now = SteadyNow();
  std::vector<std::function<void()>> to_wake;
  {
    MutexLock lock(mu_);
    auto it = services_.find(service);
    if (it == services_.end()) return;
    Service& s = it->second;
    auto w = s.waiters.find(waiter);
    if (w == s.waiters.end()) return;
    QueueOf(s, w->second.pool).Remove(waiter);
    const std::optional<Ticket> granted = std::move(w->second.grant);
    s.waiters.erase(w);
    if (!granted) return;
    // Granted but not taken: the replica goes to the next request.
    EndFlight(*granted);
    Dispatch(service, s, now, to_wake);
  }
  for (auto& wake : to_wake) wake();
}

route::TokenLimitDecision GatewayState::TakeTenantTokens(const std::string& tenant, double tokens) {
  if (!(config_.admission.tenant_tokens_per_minute > 0)) return {};  // no lock per request
  const double now = SteadyNow();
  MutexLock lock(mu_);
  return tenant_limits_.Take(tenant, tokens, now);
}

uint64_t GatewayState::NextWaiterId() { return next_waiter_++; }

void GatewayState::Record(const std::string& service, const RequestMeasurement& m) {
  MutexLock lock(stats_mu_);
  stats_.Record(service, m);
}

void GatewayState::UpstreamConnected() {
  MutexLock lock(stats_mu_);
  stats_.UpstreamConnected();
}

void GatewayState::ConnectionOpened() {
  MutexLock lock(stats_mu_);
  stats_.ConnectionOpened();
}

void GatewayState::ConnectionClosed() {
  MutexLock lock(stats_mu_);
  stats_.ConnectionClosed();
}

}  // namespace gpuscale::gateway
