// VariantOrchestrator: one service of a mixed fleet (issue 47), whose replicas run on
// several variants (a GPU type and shape each, daemon::VariantConfig), each variant's replicas
// in an orchestrator of its own (ids "<service>.<variant>-<n>", leases only of its type),
// shown to the daemon and its controller as one ServiceOrchestrator.
//
// Placement follows the simulator's (sim::SimOrchestrator): a new or pending replica goes to
// the variant scale::CheapestFittingOffer picks, the cheapest per capacity among those with
// free GPUs of their type (a type with none is skipped, not waited on). A replica that fits
// no variant waits pending in the cheapest one, and a later Place moves it to whichever
// variant fits then. ListReplicas reports each replica's capacity and drain rank (price per
// capacity), so the reconciler counts capacity and drains the dearest first.
//
// Preemption (a cloud's spot notice, Preempt): the replica stops taking new requests
// (drained), leaves ListReplicas at once so that the controller starts its replacement on the
// cheapest variant with free GPUs, and is stopped, its GPUs freed, when its last request ends
// or at the notice's deadline, whichever comes first. "Its last request ends" is read from
// ReportOutstanding (the daemon reports the larger of the replica's scraped count and the
// gateway's exact one) from the second report after the notice on: the first may have been
// taken before the gateway stopped routing to it.
//
// Ownership: owns the variants' orchestrators (through a PooledOrchestrator).
// Thread-safety: not thread-safe, as every ServiceOrchestrator.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orch/pooled_orchestrator.h"
#include "scale/variant_allocator.h"

namespace gpuscale::orch {

// One variant as the orchestrator places it.
struct VariantPlacement {
  std::string name;
  std::string gpu_type;
  int gpus_per_replica = 1;
  double capacity = 1;        // relative to the first variant's replica; > 0
  double price_per_hour = 0;  // per replica (the type's price per GPU-hour x GPUs)
  bool spot = false;
};

// GPUs of each type free now (not leased), by type key.
using FreeGpuCounts = std::function<std::map<std::string, int>(Seconds now)>;

// The variant the next replica of a mixed fleet should use (the simulator's rule, above):
// `held` replicas per variant hold GPUs now. -1 when no variant has free GPUs for one more.
int ChooseVariant(const std::vector<VariantPlacement>& variants, const std::vector<int>& held,
                  const std::map<std::string, int>& free_gpus);

class VariantOrchestrator final : public ServiceOrchestrator {
 public:
  // pools[i] runs variants[i]. REQUIRES: as many pools as variants, at least one.
  VariantOrchestrator(std::vector<VariantPlacement> variants,
                      std::vector<PooledOrchestrator::Pool> pools, FreeGpuCounts free_gpus);

  // The spot notice: see the header comment; the deadline is now + notice. A replica not
  // yet serving (pending, starting) is stopped at once. A second notice for the same replica
  // keeps the earlier deadline. Errors: kNotFound for an unknown or stopping replica.
  Status Preempt(const std::string& id, Seconds notice, Seconds now);
  // The variant replica `id` runs on, or -1.
  int VariantOf(const std::string& id) const { return pools_.PoolOf(id); }
  const std::vector<VariantPlacement>& variants() const { return variants_; }

  // scale::ReplicaOrchestrator
  std::vector<scale::ReplicaStatus> ListReplicas() const override;
  Result<scale::ReplicaStatus> Start(Seconds now) override;
  Status Place(const std::string& id, Seconds now) override;
  Status Drain(const std::string& id, Seconds now) override { return pools_.Drain(id, now); }
  Status Resume(const std::string& id, Seconds now) override;
  Status Stop(const std::string& id, Seconds now) override;

  // ServiceOrchestrator: every variant's; Poll also ends the preemptions due.
  void Poll(Seconds now) override;
  void PrepareProbes(Seconds now) override { pools_.PrepareProbes(now); }
  AdoptionReport Adopt(const std::vector<ReplicaRecord>& records, Seconds now) override {
    return pools_.Adopt(records, now);
  }
  Status ReportOutstanding(const std::string& id, int outstanding) override;
  void StopAll(Seconds now) override { pools_.StopAll(now); }
  bool HasProcesses() const override { return pools_.HasProcesses(); }
  // Every variant's replicas, each with its variant, capacity and preemption deadline.
  std::vector<ReplicaInfo> Replicas(Seconds now) const override;
  std::vector<ReplicaRecord> Records() const override { return pools_.Records(); }
  std::vector<OrchestratorEvent> TakeEvents() override;
  scale::AdapterCapacity Capacity(Seconds now) const override { return pools_.Capacity(now); }

 private:
  std::vector<int> Held() const;  // replicas holding GPUs, per variant (preempting included)
  int Cheapest() const;           // the variant a replica that fits none waits in
  void EndPreemptions(Seconds now);

  std::vector<VariantPlacement> variants_;
  PooledOrchestrator pools_;
  FreeGpuCounts free_gpus_;
  struct Preemption {
    Seconds deadline{0};
    // Outstanding counts reported since the notice. The first may predate the gateway's
    // knowing (its routes change after the tick that drained the replica), so the replica
    // goes on a zero from the second on.
    int reports = 0;
  };
  std::map<std::string, Preemption> preempting_;  // by replica
  std::vector<OrchestratorEvent> events_;
};

}  // namespace gpuscale::orch
