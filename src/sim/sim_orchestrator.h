// SimOrchestrator: the simulator's scale::ReplicaOrchestrator. Replicas are SimReplica
// engines placed on a simulated GPU inventory through alloc::LeaseLedger (the same ledger the
// daemon uses), so "no free GPUs -> pending" behaves as live. It also keeps the GPU-time
// account (every second a replica holds GPUs, cold start and drain included).
//
// The engine drives time: it turns starting replicas ready (MarkReady) when their cold start
// ends, routes requests to ReadySlots(), and injects crashes.
//
// Ownership: owns the replicas and the ledger; borrows the model and the request table.
// Thread-safety: none (one simulation thread).
#pragma once

#include <limits>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "alloc/lease_ledger.h"
#include "alloc/pool_budget.h"
#include "gpu/gpu_info.h"
#include "scale/replica_orchestrator.h"
#include "sim/sim_replica.h"
#include "sim/simulation.h"

namespace gpuscale::sim {

struct ReplicaSlot {
  std::string id;
  scale::ReplicaPhase phase = scale::ReplicaPhase::kPending;
  double phase_since = 0;
  double placed_at = -1;  // < 0 while holding no GPUs
  // When its cold start ended (the router's slow start counts from it); -infinity for the
  // initial replicas, warm when the trace starts. Draining and resuming leave it alone.
  double warm_since = -std::numeric_limits<double>::infinity();
  bool gone = false;      // stopped or crashed
  int variant = -1;       // index into the orchestrator's variants; -1 while not placed
  // A spot replica's notice came: it takes no new requests, is hidden from the controller
  // (which replaces it) and goes when its requests finish or the notice runs out.
  bool preempted = false;
  uint32_t version = 0;   // bumped when the replica's next event time changes
  std::unique_ptr<SimReplica> engine;
};

// The GPUs the pools of a disaggregated service share (sim/disagg.h): one inventory, one
// lease ledger, and the budget rules of alloc::PoolBudget. Owned by the disaggregated
// engine; each pool's orchestrator borrows it and is pool `index` of the budget.
struct SharedGpus {
  SharedGpus(gpu::GpuSnapshot gpus, alloc::PoolBudget pools)
      : inventory(std::move(gpus)), budget(std::move(pools)) {}
  gpu::GpuSnapshot inventory;
  alloc::LeaseLedger ledger;
  alloc::PoolBudget budget;
};

// The simulated cluster's GPUs (cluster.nodes x gpus_per_node), all free.
gpu::GpuSnapshot MakeSimInventory(const ClusterSpec& cluster);

// One variant as the orchestrator runs it (sim/variant.h).
struct VariantRuntime {
  VariantSpec spec;
  const ReplicaModel* model = nullptr;  // borrowed
  double capacity = 1;  // relative to the first variant's replica (the policy's unit)
  // The longest prompt its replicas take while a faster-prefilling variant's replica is
  // ready (route::Candidate::max_prompt_tokens); 0: any (SetLongPromptLimits).
  int64_t max_prompt_tokens = 0;
};

// Long prompts to the faster type (VariantPlan::long_prompt_ttft_share): a replica's prefill
// of a prompt alone may use at most `share` of the TTFT target, leaving the rest to queueing
// and to the decode steps chunked prefill interleaves with it. A rule from the SLO and the
// model, not fitted to a trace.
//
// The longest prompt (tokens) `model` prefills within share x ttft_s.
int64_t LongPromptLimit(const ReplicaModel& model, double ttft_s, double share);

// Sets each variant's max_prompt_tokens: its LongPromptLimit, except 0 (any) for those whose
// limit is the largest (the fastest prefill); all 0 when every limit is the same or share
// is 0.
void SetLongPromptLimits(std::vector<VariantRuntime>& variants, double ttft_s, double share);

// GPU time and money per variant.
struct VariantUsage {
  double gpu_seconds = 0;
  int preempted = 0;
  int64_t lost_to_preemption = 0;
  int placed = 0;  // replicas placed on its GPUs (initial ones included)
};

// The runtime of each listed variant: its calibrated model (kept in `models`) and its
// capacity (the variant's profile, else ModelCapacity) relative to the first variant's.
// Empty for a single-shape service. Errors: kInvalidArgument naming
// service.variants[i].gpu_type when no calibrated model covers the model on that type/shape.
Result<std::vector<VariantRuntime>> BuildVariants(
    const SimulationConfig& config, std::vector<std::unique_ptr<ReplicaModel>>& models);

class SimOrchestrator final : public scale::ReplicaOrchestrator {
 public:
  // With `shared`, replicas are placed on its GPUs as pool `pool` of its budget (a placement
  // the budget refuses stays pending); without it, on the cluster of `config` alone.
  SimOrchestrator(const SimulationConfig& config, const ReplicaModel& model,
                  std::vector<RequestRecord>& requests, SharedGpus* shared = nullptr, int pool = 0);

  std::vector<scale::ReplicaStatus> ListReplicas() const override;
  Result<scale::ReplicaStatus> Start(Seconds now) override;
  Status Place(const std::string& id, Seconds now) override;
  Status Drain(const std::string& id, Seconds now) override;
  Status Resume(const std::string& id, Seconds now) override;
  Status Stop(const std::string& id, Seconds now) override;

  // A mixed fleet (issue 47): replicas of these variants, each type on its own simulated
  // GPUs (cluster.nodes x gpus_per_node of every type). A new or pending replica is placed on
  // the variant scale::CheapestFittingOffer picks (cheapest per capacity with free GPUs,
  // within the service's per-type limits, budget and on-demand base). Without it, the one
  // implicit variant. REQUIRES: called before any replica exists; not with `shared`.
  void SetVariants(std::vector<VariantRuntime> variants);
  const std::vector<VariantRuntime>& variants() const { return variants_; }
  std::vector<VariantUsage> Usage(double now) const;  // per variant, up to `now`
  // A placed replica's relative capacity (1 in a single-shape fleet): its routing weight.
  double CapacityOf(int slot) const {
    return mixed_ ? variants_[slots_[slot].variant].capacity : 1.0;
  }
  // A placed replica's longest prompt while a faster type's replica is ready; 0: any.
  int64_t MaxPromptOf(int slot) const {
    return mixed_ ? variants_[slots_[slot].variant].max_prompt_tokens : 0;
  }

  // Spot preemption (seeded, sim/variant.h): the next notice or reclaim time (infinity when
  // none), and handling it at `now`. A notice drains the replica out of the controller's
  // sight; a reclaim ends it, its remaining requests lost. Both no-ops for a replica gone.
  double NextPreemptionTime() const;
  void HandlePreemption(double now);
  // Ends a preempted replica whose last request finished before its notice ran out.
  void ReleaseIfPreemptedAndIdle(int slot, double now);

  // Engine hooks.
  std::vector<ReplicaSlot>& slots() { return slots_; }
  const std::vector<int>& ready_slots() const { return ready_; }
  const std::vector<int>& live_slots() const { return live_; }  // not gone, creation order
  // Slots placed since the last call (their cold start began at phase_since).
  std::vector<int> TakePlaced();
  // Slots that left service (stop/crash) since the last call.
  std::vector<int> TakeRemoved();
  // Slots that re-entered service via Resume since the last call.
  std::vector<int> TakeResumed();
  void MarkReady(int slot, double now);
  // The replica vanishes with its requests (as a dead process would); GPUs are freed.
  void Crash(int slot, double now);
  // Creates an already-ready replica at `now` (initial replicas). False when no GPUs.
  bool StartWarm(double now);
  // Tokens per prefix-cache block of the replicas placed from now on (SimReplica); 0, the
  // default, turns their prefix cache off.
  void set_prefix_block_tokens(int32_t tokens) { prefix_block_tokens_ = tokens; }

  double GpuSeconds(double now) const;  // accounted so far, live replicas up to `now`
  int PlacedReplicas() const { return placed_; }
  int gpus_in_use() const { return gpus_in_use_; }
  int64_t aborted() const { return aborted_; }
  int started() const { return started_; }
  int stopped() const { return stopped_; }
  int Count(scale::ReplicaPhase phase) const;

 private:
  // GPUs of one type and their leases (the non-shared case).
  struct TypePool {
    std::string gpu_type;
    gpu::GpuSnapshot inventory;
    alloc::LeaseLedger ledger;
    int used = 0;
  };

  int Find(const std::string& id) const;  // slot index or -1
  int ChooseVariant() const;              // -1 when no variant fits
  TypePool& PoolOf(int variant);
  int GpusOf(int slot) const { return variants_[slots_[slot].variant].spec.gpus_per_replica; }
  bool TryPlace(int slot, double now);
  void Release(int slot, double now);
  void SetReady(int slot, bool ready);

  const SimulationConfig& config_;
  std::vector<RequestRecord>& requests_;
  int32_t prefix_block_tokens_ = 0;
  std::vector<VariantRuntime> variants_;
  bool mixed_ = false;  // SetVariants was called: capacities, ranks and limits apply
  std::vector<std::unique_ptr<TypePool>> pools_;  // empty with shared_
  std::vector<VariantUsage> usage_closed_;        // per variant, released replicas
  struct PreemptionEvent {
    double time = 0;
    int slot = 0;
    bool reclaim = false;  // false: the notice
    bool operator>(const PreemptionEvent& o) const {
      return time != o.time ? time > o.time : slot > o.slot;
    }
  };
  void SchedulePreemption(int slot, double now);
  std::priority_queue<PreemptionEvent, std::vector<PreemptionEvent>, std::greater<>> preemptions_;
  std::mt19937_64 preemption_rng_;
  SharedGpus* shared_ = nullptr;
  int pool_ = 0;
  std::vector<ReplicaSlot> slots_;
  std::vector<int> live_;   // slots not gone, creation order
  std::vector<int> ready_;  // ready slots, creation order
  std::vector<int> placed_new_, removed_, resumed_;
  int placed_ = 0;
  int gpus_in_use_ = 0;
  int64_t aborted_ = 0;
  int started_ = 0, stopped_ = 0;
};

}  // namespace gpuscale::sim
