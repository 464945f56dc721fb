// The trace-driven simulator's inputs and outputs, and its entry point RunSimulation: a
// deterministic discrete-event replay of a request trace through the real controller,
// reconciler and policy code (scale/), a simulated orchestrator placing replicas on
// simulated GPUs through the alloc lease ledger, continuous-batching replicas
// (sim_replica.h) and the same metric windows the daemon reads (metric_view.h).
//
// Determinism: same config, model, policy, trace -> identical result (no clocks, no
// unordered iteration, no threads). Different simulations may run on different threads;
// the ReplicaModel is only read.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "route/admission_config.h"
#include "route/picker_spec.h"
#include "scale/policy.h"
#include "sim/replica_model.h"
#include "sim/trace.h"
#include "sim/variant.h"

namespace gpuscale::sim {

struct ClusterSpec {
  int nodes = 1;                  // simulated GPU nodes
  int gpus_per_node = 8;
  std::string gpu_type = "H100";  // shown in GPU names
  int64_t gpu_memory_mb = 81559;  // per GPU
};

struct ServiceSpec {
  std::string name = "llm";
  int gpus_per_replica = 1;
  int min_replicas = 1;
  int max_replicas = 8;
  // `initial_replicas: auto` in a config: the warm start is sized from the trace
  // (WarmStartReplicas, sim/static_fleet.h) before anything runs.
  static constexpr int kAutoInitialReplicas = -2;
  int initial_replicas = -1;  // ready at t = 0; -1 = min_replicas; kAutoInitialReplicas
  Seconds cold_start{60};     // placement -> ready
  Seconds drain_timeout{300};
  // Variants, per-type GPU limits, a budget (sim/variant.h). Without variants the service
  // runs one implicit variant: gpus_per_replica on replica_model.gpu, priced 0.
  VariantPlan fleet = {};

  // Replicas ready at t = 0: initial_replicas, or min_replicas when unset. The run, the
  // oracle and the reactive reference all start from it.
  int ReadyAtStart() const { return initial_replicas >= 0 ? initial_replicas : min_replicas; }
};

// Per-request SLO: met when TTFT <= ttft_seconds and mean time per output token (after the
// first) <= tpot_seconds. Attainment = share of trace requests meeting both.
struct SloSpec {
  double ttft_seconds = 1.0;
  double tpot_seconds = 0.05;
  double target_ratio = 0.99;  // the attainment a policy is expected to reach

  friend bool operator==(const SloSpec&, const SloSpec&) = default;
};

// Injected faults (for recovery tests and what-if runs).
struct FaultSpec {
  std::vector<double> crash_at_seconds;  // the oldest ready replica crashes at each time
  std::vector<std::pair<double, double>> metrics_outages;  // [from, to): scrapes fail
  // Seeds the spot variants' preemption process (sim/variant.h: preemptions_per_hour); the
  // same seed gives the same preemptions for the same run. Default 1.
  uint64_t preemption_seed = 1;
};

// The link the KV cache crosses from prefill to decode.
struct LinkSpec {
  std::string name = "rdma-400g";  // a preset, or "<n> Gb/s" for a number
  double gbps = 400;               // gigabits per second, one direction
};

// A disaggregated service (sim/disagg.h): a prefill and a decode pool on one GPU budget.
struct DisaggSpec {
  ServiceSpec prefill = {};  // name, gpus_per_replica, min/max/initial replicas, cold start, drain
  ServiceSpec decode = {};
  LinkSpec link = {};
  int gpu_budget = 0;  // GPUs both pools share; 0: the whole cluster
  int BudgetGpus(const ClusterSpec& c) const {
    return gpu_budget > 0 ? gpu_budget : c.nodes * c.gpus_per_node;
  }
};

struct SimulationConfig {
  ClusterSpec cluster;
  ServiceSpec service;
  ReplicaModelConfig model;
  // The gateway in front of the replicas (of each pool, when disaggregated): the live
  // gateway's picker, with no slow start by default. Slow start (least outstanding only)
  // gives a replica, for that long after its cold start, a share of arrivals growing from a
  // tenth to a full one. Without it, least-outstanding routing sends a fresh replica every
  // arrival until it holds as many requests as the others: ~100 prompts at once on conv
  // x20, whose prefill queue misses the TTFT target for most of them (docs/simulation.md,
  // "Router slow start"). Prefix affinity keys on a request's first block hash and
  // prefix_cache routing reads the replicas' prefix caches (precise) or its own record of
  // where it sent which blocks (approximate); both need a trace with block hashes (Mooncake's
  // hash_ids) and act as least outstanding without. Disaggregated pools route without them.
  route::PickerSpec router;
  // Set: the door admits as the gateway's `gateway.admission` does (route::AdmissionQueue):
  // past max_in_flight_per_replica requests on every ready replica (less
  // critical_reserved_per_replica for a request that is not critical: route::SlotLimit), or
  // with none ready, a request waits by priority, then tenants' fair share; a sheddable one
  // expected, or found, to wait past sheddable_max_wait is shed (429). A request's priority
  // and tenant are the trace's columns (TraceRequest). Unset: requests wait for a ready
  // replica only.
  std::optional<route::AdmissionConfig> admission = {};
  Seconds control_interval{15};
  Seconds scrape_interval{5};  // scrapes between ticks; each tick also scrapes first, as live
  SloSpec slo;
  FaultSpec faults;
  Seconds oracle_bucket{60};  // granularity of the oracle's load profile
  // Set: the service runs as two pools (RunDisaggSimulation); `service` is then unused but
  // for its name.
  std::optional<DisaggSpec> disaggregated = {};

  // The most replicas that can serve at once: service.max_replicas, or fewer when the cluster
  // cannot place that many (whole replicas per node). The oracle, the static fleet and the
  // reactive reference size fleets up to it: a fleet the cluster cannot hold is no plan.
  int FleetCeiling() const {
    const int64_t per_node = cluster.gpus_per_node / std::max(service.gpus_per_replica, 1);
    const int64_t placeable = static_cast<int64_t>(cluster.nodes) * per_node;
    return static_cast<int>(std::min<int64_t>(service.max_replicas, placeable));
  }
};

// The service's variants: those listed, or the one implicit variant (name "default",
// `model.gpu`, `service.gpus_per_replica`, no price).
std::vector<VariantSpec> EffectiveVariants(const SimulationConfig& config);

// A replica's capacity from its model alone: the mean generated tokens/s over
// DecodeCapacities' grid (sim/role_capacity.h) at the TPOT target. Orders variants by price
// per capacity and weights routing where no profile gives a variant's capacity.
double ModelCapacity(const ReplicaModel& model, const SloSpec& slo);

// The replica model config of `variant`: `model` with its GPU type and tensor_parallel.
ReplicaModelConfig VariantModelConfig(const ReplicaModelConfig& model, const VariantSpec& variant);

// The largest cluster one run simulates (nodes x gpus_per_node); its inventory is allocated
// up front.
inline constexpr int64_t kMaxSimulatedGpus = 1'000'000;

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0;
};

// One variant's share of a run (a single-shape service has one, "default", priced 0).
struct VariantReport {
  std::string name;
  std::string gpu_type;
  bool spot = false;
  double capacity = 1;  // per replica, relative to the first variant's
  double gpu_hours = 0;
  double cost = 0;  // gpu_hours x price per GPU-hour
  int replicas_placed = 0;
  int preempted = 0;               // spot replicas that got a preemption notice
  int64_t lost_to_preemption = 0;  // requests still running when a notice ran out
};

// One class of requests (a priority, or a tenant) in a run with a door.
struct ClassReport {
  std::string name;  // "critical", ...; a tenant's name ("" for rows without one)
  int64_t requests = 0;
  int64_t completed = 0;
  int64_t slo_met = 0;
  int64_t shed = 0;        // refused by the door (429), at arrival or when its wait ran out
  int64_t aborted = 0;     // lost to a replica stop, crash or preemption
  int64_t unfinished = 0;  // still waiting or running when the run ended
  double attainment = 0;   // slo_met / requests
  // Prompt and output tokens of the completed requests: the class's share of the service.
  int64_t served_tokens = 0;
  // Completed requests sent to a replica while another tenant's request of the same
  // priority waited at the door: what fair share across tenants governs. The rest went
  // while nobody else waited (an empty door admits every arrival, so a hot tenant's share
  // there is its share of arrivals).
  int64_t contended_completed = 0;
};

struct SimReport {
  std::string policy;  // family
  int64_t requests = 0;
  int64_t completed = 0;
  int64_t aborted = 0;  // lost to a replica stop, crash or preemption
  // Spot (issue 47): notices received, and requests still running when a notice ran out
  // (counted in `aborted` too).
  int preempted = 0;
  int64_t lost_to_preemption = 0;
  int64_t slo_met = 0;
  double attainment = 0;  // slo_met / requests
  // SLO misses among requests routed to a replica in its first kFreshReplicaSeconds after a
  // cold start: where a least-outstanding router without slow start floods a new replica,
  // most of a run's misses land here (docs/simulation.md, "Router slow start").
  int64_t fresh_replica_misses = 0;
  Percentiles ttft_s, tpot_s, e2e_s;
  // Prompt tokens of all requests, and those a replica's prefix cache supplied (vLLM's
  // prefix_cache_hits_total summed over replicas); the ratio is 0 without a prompt token.
  int64_t prompt_tokens = 0;
  int64_t prefix_cache_hit_tokens = 0;
  double prefix_hit_ratio = 0;
  double duration_s = 0;  // simulated time: until the last request finished
  double gpu_hours = 0;   // GPU time held by placed replicas (cold start and drain included)
  double cost = 0;        // the variants' GPU-hours at their prices (0 without prices)
  std::vector<VariantReport> variants;
  int scale_ups = 0;      // ticks that raised the desired count
  int scale_downs = 0;    // ticks that lowered it
  int replicas_started = 0;
  int replicas_stopped = 0;
  int peak_replicas = 0;  // most replicas holding GPUs at once
  int controller_errors = 0;
  int64_t events = 0;     // discrete events processed (for the benchmark)
  // With a door (SimulationConfig::admission): requests it shed (429), and the run per
  // priority (those with requests, critical first) and per tenant (when the trace names
  // any; in first-seen order).
  int64_t shed = 0;
  std::vector<ClassReport> priorities;
  std::vector<ClassReport> tenants;
  // Each tenant within each priority ("sheddable/tenant-0"), priority first: fair share is
  // a claim within a priority (a hot tenant's standard requests rightly go before another
  // tenant's sheddable ones), so that is where it is checked.
  std::vector<ClassReport> priority_tenants;
};

// One control tick (the --timeline CSV).
struct TimelineRow {
  double time_s = 0;
  double arrival_rate = 0;  // requests/s since the previous tick
  int desired = 0;
  int ready = 0, starting = 0, pending = 0, draining = 0;
  int waiting = 0, running = 0;  // live totals over replicas (+ router queue in waiting)
  int gpus_in_use = 0;
  std::string reason;  // the policy's reason
};

struct SimResult {
  SimReport report;
  std::vector<TimelineRow> timeline;
  std::vector<std::string> errors;  // controller action failures, "t=...: ..."
};

struct SimOptions {
  bool record_timeline = true;
  // Called now and then with the share of arrivals replayed (0..1); may be empty.
  std::function<void(double)> progress;
};

// The most scrape or control ticks one run steps through (58 days of 5 s scrapes): the
// timeline keeps a row per control tick, and the clock visits idle ticks too.
inline constexpr double kMaxSimulatedTicks = 1e6;

// Errors: kInvalidArgument for an empty trace, a trace spanning more than kMaxSimulatedTicks
// ticks (field "trace") or an invalid config (field named), e.g. gpus_per_replica >
// gpus_per_node. REQUIRES: policy != nullptr.
Result<SimResult> RunSimulation(const SimulationConfig& config, const ReplicaModel& model,
                                std::unique_ptr<scale::Policy> policy, const Trace& trace,
                                const SimOptions& options = {});

// Checks a config alone (the same checks RunSimulation starts with; RunSimulation also
// refuses an `initial_replicas: auto` not yet sized from the trace).
Status ValidateSimulationConfig(const SimulationConfig& config);

}  // namespace gpuscale::sim
