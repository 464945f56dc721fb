// GatewayState: what the gateway knows between requests, shared by its I/O threads and the
// daemon's control loop.
//   - the route table the daemon publishes after every tick: each service's model names and
//     its ready replicas (a draining replica is not published, so it receives nothing new);
//     a disaggregated service (prefill/decode, issue 24) has two sets, one per role;
//   - exact in-flight requests per replica (the daemon finishes a drain when it reaches 0);
//   - passive health: replicas ejected after repeated transport failures;
//   - the activator and admission queues: per service and pool, requests waiting for a
//     replica, either because none is ready or because every one holds
//     admission.max_in_flight_per_replica requests; they get one in route::AdmissionQueue's
//     order (priority, then tenants' fair share), handed over as a granted ticket when one
//     frees (Release, Publish, a replica back from its health checks); a request entering an
//     empty service's queue tells the daemon at once (demand listener); a service whose
//     replicas cannot start (unavailable_reason) wakes its waiters to fail;
//   - per-tenant token limits (route::TenantTokenLimits);
//   - measurements at the door (gateway_stats.h), exposed as gpuscale_gateway_* families.
// It does no network I/O; the time comes from the steady clock (replica ages from the daemon
// are converted on Publish).
//
// Thread-safety: every method may be called from any thread; one mutex guards all of it.
// Callbacks (wakers, the demand listener) run outside the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "gateway/gateway_config.h"
#include "gateway/gateway_stats.h"
#include "gateway/kv_event_sink.h"
#include "gateway/prefix_cache_routing.h"
#include "gateway/route_key.h"
#include "route/admission_queue.h"
#include "route/picker.h"
#include "route/token_bucket.h"

namespace gpuscale::gateway {

// One ready replica as the daemon publishes it.
struct ReplicaRoute {
  std::string id;
  std::string host;
  int port = 0;
  double ready_age_seconds = 1e9;  // how long it has been ready (slow start)
  // Its capacity relative to the service's other replicas (a mixed fleet's variant, issue
  // 47): least-outstanding routing weights its share by it (route::Candidate). > 0.
  double capacity_weight = 1;
  // Where it publishes its KV events (prefix_cache with prefix_index precise); "" = nowhere.
  std::string kv_events_endpoint = {};
};

struct ServiceRoute {
  std::string name;
  std::vector<std::string> models;     // names clients send in `model`
  std::vector<ReplicaRoute> replicas;  // ready ones, oldest first; the decode ones when
                                       // `disaggregated`
  // Prefill/decode disaggregation (docs/gateway.md): a request goes first to one of
  // `prefill_replicas` (its prompt, one token, a KV handle), then to one of `replicas`.
  bool disaggregated = false;
  std::vector<ReplicaRoute> prefill_replicas = {};  // ready ones, oldest first
  // Set by the daemon while the service has no ready replica because its replicas cannot
  // start (e.g. "cannot start 'vllm': No such file or directory ..."): a request that finds
  // no replica is answered 503 naming it at once, instead of waiting out queue_timeout for a
  // replica that will not come. "" = none.
  std::string unavailable_reason = {};
};

// Which of a service's replica sets a request step goes to: kServe, the aggregated replicas
// (or a disaggregated service's decode ones); kPrefill, a disaggregated service's prefill ones.
enum class RoutePool { kServe, kPrefill };

// A replica chosen for one request; Release it exactly once.
struct Ticket {
  std::string service;
  std::string replica;
  std::string host;
  int port = 0;
  // True once the gateway's health checks gave the replica up (ReportProbe); the relay's
  // watch ends a relay waiting on it. Never null for a ticket from Acquire.
  std::shared_ptr<const std::atomic<bool>> down;
  RoutePool pool = RoutePool::kServe;
  double tokens = 0;  // the request's expected tokens: the service rate's sample on Release
  // prefix_cache: the prompt tokens the replica was expected to compute (its cached prefix
  // skipped), counted in its pending prefill until Release.
  int64_t prefill_tokens = 0;
  // The request's priority: the slots it may take (route::SlotLimit), on a retry too.
  route::Priority priority = route::Priority::kStandard;
};

// A request that waits for a replica (GatewayState::EnterQueue).
struct WaitRequest {
  uint64_t id = 0;  // NextWaiterId()
  RoutePool pool = RoutePool::kServe;
  RouteKey key = {};
  route::Priority priority = route::Priority::kStandard;
  std::string tenant = {};
  double tokens = 1;                                      // expected, prompt and output
  std::optional<double> max_wait_seconds = std::nullopt;  // shed past it (AdmissionQueue)
};

// A replica the gateway's health checks ask (health_checker.h).
struct ProbeTarget {
  std::string replica;
  std::string host;
  int port = 0;
};

// How a forwarded attempt ended, for passive health.
enum class AttemptOutcome {
  kOk,                // the replica answered (any HTTP status)
  kTransportFailure,  // refused, reset or timed out before the first response byte
  kAbandoned,         // the client went away or the stream broke after the first byte
};

class GatewayState {
 public:
  explicit GatewayState(GatewayConfig config);

  // --- daemon side ---
  // Replaces the route table. Waiting requests of services that now have a ready replica are
  // woken. Model names claimed by two services go to the first (the daemon validates).
  void Publish(std::vector<ServiceRoute> services);
  // Requests in flight on `replica` through the gateway (0 when unknown).
  int InFlight(const std::string& replica) const;
  // Requests waiting in `service`'s queues (not yet granted a replica); in all services'.
  int Queued(const std::string& service) const;
  int TotalQueued() const;
  // Called (outside the lock, from a gateway thread) with the service's name when a request
  // starts waiting for a service that has no ready replica and no request waited before it
  // (the first of a queue, not every one).
  void SetDemandListener(std::function<void(const std::string& service)> listener);
  // gpuscale_gateway_* families in Prometheus text.
  std::string MetricsText() const;
  // One service's measurements since start (zero before its first request); nullopt for a
  // service that is not in the route table.
  std::optional<ServiceStatsView> StatsOf(const std::string& service) const;

  // --- gateway side ---
  // The service serving `model`, or nullopt.
  std::optional<std::string> ServiceOf(const std::string& model) const;
  // Every model name with its service, sorted by model.
  std::vector<std::pair<std::string, std::string>> Models() const;
  // Whether `service` is published as disaggregated (false when unknown).
  bool Disaggregated(const std::string& service) const;
  // The service's published unavailable_reason ("" when none or unknown).
  std::string UnavailableReason(const std::string& service) const;
  // Picks a ready, healthy replica of `service`'s `pool` not in `exclude`, holding fewer
  // than route::SlotLimit(admission, `priority`) requests, and counts the request in flight
  // on it; nullopt when there is none. Each pool has a picker of its own.
  std::optional<Ticket> Acquire(const std::string& service, const RouteKey& key,
                                const std::set<std::string>& exclude = {},
                                RoutePool pool = RoutePool::kServe,
                                route::Priority priority = route::Priority::kStandard);
  // As Acquire for a request that just arrived: nullopt also while requests wait in the
  // pool's queue, so that a newcomer does not pass them. The ticket carries `tokens`.
  std::optional<Ticket> Admit(const std::string& service, const RouteKey& key, RoutePool pool,
                              double tokens, route::Priority priority = route::Priority::kStandard);
  // Ends a ticket's request; a replica slot it frees goes to the next waiting request.
  void Release(const Ticket& ticket, AttemptOutcome outcome);

  // Active health (health_checker.h): every published replica, both pools.
  std::vector<ProbeTarget> ProbeTargets() const;
  // One health check's outcome: config().health_check_failures failures in a row take the
  // replica out of rotation (Acquire skips it, relays waiting on it end); a pass brings it
  // back and wakes its service's waiting requests.
  void ReportProbe(const std::string& replica, bool passed);
  bool Down(const std::string& replica) const;
  // Called (outside the lock, from a gateway thread) when the health checks take a replica
  // out of rotation (`down`) or bring it back, so that the terminal says so.
  void SetProbeListener(std::function<void(const std::string& replica, bool down)> listener);

  // Queues a request for a replica of `service`'s `request.pool`, or refuses it: kFull past
  // queue_size waiting requests of the service, kShed when its expected wait exceeds its
  // max_wait_seconds. `wake` is called (any thread) when the request was granted a replica
  // or should look again (its service gained a ready replica, cannot start, or left); it
  // must be cheap and thread-safe.
  route::Admission EnterQueue(const std::string& service, const WaitRequest& request,
                              std::function<void()> wake);
  // A standard request with no tenant: whether it was queued.
  bool EnterQueue(const std::string& service, uint64_t waiter, std::function<void()> wake);
  // The ticket granted to a queued request, which then leaves the queue; nullopt while it
  // waits (or when it does not). Hands free replicas to the queue's head first, so a waiter
  // that looks again after a timer (an ejection that ran out) is served in order.
  std::optional<Ticket> TakeGrant(const std::string& service, uint64_t waiter);
  // Gives up a request's place (its client left, its wait ran out); a replica already
  // granted to it goes to the next one.
  void LeaveQueue(const std::string& service, uint64_t waiter);
  uint64_t NextWaiterId();

  // Charges a request's expected tokens to its tenant (admission.tenant_tokens_per_minute).
  route::TokenLimitDecision TakeTenantTokens(const std::string& tenant, double tokens);

  // Measurements (gateway_stats.h).
  void Record(const std::string& service, const RequestMeasurement& m);
  void ConnectionOpened();
  void UpstreamConnected();
  void ConnectionClosed();

  // Precise prefix-cache routing (docs/gateway.md, "Prefix cache"): where the subscriber
  // delivers the replicas' KV events (it never takes this object's routing lock), and every
  // published replica's KV-event endpoint, also handed to `listener` (outside the lock) after
  // each Publish that changed them.
  KvEventSink& kv_events() { return prefix_cache_; }
  std::map<std::string, std::string> KvEventEndpoints() const;
  void SetKvEndpointsListener(
      std::function<void(std::map<std::string, std::string> endpoints)> listener);

  const GatewayConfig& config() const { return config_; }

 private:
  struct Replica {
    ReplicaRoute route;
    double ready_since = 0;  // steady seconds
    uint64_t identity = 0;
  };
  struct Waiter {
    std::function<void()> wake;
    RoutePool pool = RoutePool::kServe;
    RouteKey key;
    double tokens = 1;
    route::Priority priority = route::Priority::kStandard;  // the slots it may take
    std::optional<Ticket> grant;  // a replica handed over, not yet taken
  };
  struct Service {
    std::vector<std::string> models;
    std::vector<Replica> replicas;
    std::vector<Replica> prefill;  // a disaggregated service's prefill replicas
    bool disaggregated = false;
    std::string unavailable_reason;
    std::map<uint64_t, Waiter> waiters;  // queued or granted, by id
    std::map<RoutePool, route::AdmissionQueue> queues;
  };
  struct Health {
    int consecutive_failures = 0;
    int ejections = 0;
    double ejected_until = 0;  // steady seconds
  };
  // Active health of one published replica.
  struct Probe {
    int failures = 0;  // in a row
    std::shared_ptr<std::atomic<bool>> down = std::make_shared<std::atomic<bool>>(false);
  };
  // Requests in flight on one replica, kept while any is, also after the replica left the
  // route table (a hung replica's stuck requests stay visible on /metrics).
  struct Flight {
    std::string service;
    int count = 0;
    int64_t prefill_tokens = 0;  // prefix_cache: Ticket::prefill_tokens of those requests
  };

  static double SteadyNow();
  std::optional<Ticket> AcquireLocked(const std::string& service, const RouteKey& key,
                                      const std::set<std::string>& exclude, RoutePool pool,
                                      route::Priority priority, double now) GS_REQUIRES(mu_);
  // Sets kv_endpoints_ from the route table; whether they changed.
  bool UpdateKvEndpoints() GS_REQUIRES(mu_);
  // Grants free replicas to `service`'s queued requests in their queues' order; the wakes of
  // those granted go to `to_wake`.
  void Dispatch(const std::string& name, Service& s, double now,
                std::vector<std::function<void()>>& to_wake) GS_REQUIRES(mu_);
  static route::AdmissionQueue& QueueOf(Service& s, RoutePool pool);
  // Ends `ticket`'s request in its replica's in-flight count.
  void EndFlight(const Ticket& ticket) GS_REQUIRES(mu_);
  // One more transport failure of `replica` (passive health): past eject_after_failures in a
  // row it is out of rotation for a while.
  void Eject(const std::string& replica, double now) GS_REQUIRES(mu_);
  static std::vector<Replica> Replicas(std::vector<ReplicaRoute>& routes, double now);
  // Both pools' replicas of `s`.
  static std::vector<const Replica*> AllReplicas(const Service& s);

  const GatewayConfig config_;
  // Two locks, so that recording a finished request or a connection (every request, after
  // its last byte) never waits on routing (every request, before its first): mu_ guards the
  // route table and what routing reads and writes; stats_mu_ the measurements. Taken
  // together, mu_ first.
  mutable Mutex mu_;
  std::map<std::string, Service> services_ GS_GUARDED_BY(mu_);
  std::map<std::string, std::string> model_to_service_ GS_GUARDED_BY(mu_);
  std::map<std::string, Flight> in_flight_ GS_GUARDED_BY(mu_);  // by replica id
  std::map<std::string, Health> health_ GS_GUARDED_BY(mu_);     // by replica id
  std::map<std::string, Probe> probes_ GS_GUARDED_BY(mu_);      // by published replica id
  std::map<std::pair<std::string, RoutePool>, route::Picker> pickers_ GS_GUARDED_BY(mu_);
  std::function<void(const std::string&)> demand_listener_ GS_GUARDED_BY(mu_);
  std::function<void(const std::string&, bool)> probe_listener_ GS_GUARDED_BY(mu_);
  std::function<void(std::map<std::string, std::string>)> kv_endpoints_listener_ GS_GUARDED_BY(mu_);
  std::map<std::string, std::string> kv_endpoints_ GS_GUARDED_BY(mu_);  // by replica id
  // Its own lock (taken inside mu_, never around it): the KV-event subscriber applies
  // messages there without waiting on routing.
  PrefixCacheRouting prefix_cache_;
  route::TenantTokenLimits tenant_limits_ GS_GUARDED_BY(mu_);
  mutable Mutex stats_mu_;
  GatewayStats stats_ GS_GUARDED_BY(stats_mu_);
  std::atomic<uint64_t> next_waiter_{1};
};

// A ticket kept past its own step: a disaggregated request's prefill replica stays counted in
// flight until the decode replica's first response byte, because the decode replica pulls
// the KV from it meanwhile (a drain that stopped it then would lose the request). Released
// once, as kOk, by Release or on destruction. Thread-compatible (one request's coroutine).
class HeldTicket {
 public:
  explicit HeldTicket(GatewayState& state) : state_(state) {}
  ~HeldTicket() { Release(); }
  HeldTicket(const HeldTicket&) = delete;
  HeldTicket& operator=(const HeldTicket&) = delete;

  void Hold(Ticket ticket) {
    Release();
    ticket_ = std::move(ticket);
  }
  void Release() {
    if (ticket_) state_.Release(*ticket_, AttemptOutcome::kOk);
    ticket_.reset();
  }

 private:
  GatewayState& state_;
  std::optional<Ticket> ticket_;
};

}  // namespace gpuscale::gateway
