// PoolBudget: one GPU budget shared by the pools of a disaggregated service (prefill and
// decode), so that a rebalance can never overshoot the budget and one pool's scale-up can
// never take the GPUs the other pool needs to stay at its minimum (Dynamo issue #12428: a
// prefill/decode rebalance that exceeded the GPU budget).
//
// Every placement asks Acquire first. A grant must keep
//   sum over pools of GPUs held           <= budget, and
//   budget - held after the grant         >= every *other* pool's shortfall below its
//                                            minimum (min_gpus - held, when positive),
// so GPUs a pool is owed for its minimum stay reserved even while it holds fewer (a crash, a
// cold start still to be placed). A pool may always grow up to its own minimum when the
// budget allows it, so two pools whose minimums fit the budget can never deadlock.
//
// Pure bookkeeping (the lease ledger picks the actual GPUs). Thread-safety: none; one
// orchestrator thread (the simulator) or the caller's lock guards it.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace gpuscale::alloc {

struct PoolReserve {
  std::string name;  // "prefill", "decode": shown in refusals
  int min_gpus = 0;  // GPUs the pool is owed: min_replicas x gpus_per_replica
};

class PoolBudget {
 public:
  // Errors: kInvalidArgument (field "gpu_budget") when budget < 1 or the pools' minimums
  // together exceed it (naming both numbers), or a min_gpus < 0.
  static Result<PoolBudget> Make(int budget_gpus, std::vector<PoolReserve> pools);

  // Grants `gpus` more to pool `pool` when the rules above allow. kResourceExhausted naming
  // the budget or the pool whose minimum would be starved otherwise. REQUIRES: pool valid.
  Status Acquire(int pool, int gpus);
  // Gives back `gpus` of pool `pool` (a replica stopped or crashed). REQUIRES: held >= gpus.
  void Release(int pool, int gpus);
  // Counts `gpus` already in use by pool `pool` without asking (a replica adopted after a
  // daemon restart: its process runs on them whatever the budget says). Held may then exceed
  // the budget (it was lowered meanwhile); Acquire refuses until enough is released.
  void Restore(int pool, int gpus);

  int held(int pool) const { return held_[static_cast<size_t>(pool)]; }
  int total_held() const;
  int budget() const { return budget_; }
  int pools() const { return static_cast<int>(pools_.size()); }

 private:
  PoolBudget(int budget, std::vector<PoolReserve> pools);

  int budget_ = 0;
  std::vector<PoolReserve> pools_;
  std::vector<int> held_;
};

}  // namespace gpuscale::alloc
