// PooledOrchestrator: one service whose replicas run as several pools, each with an
// orchestrator of its own (a disaggregated service's prefill and decode pools, issue 24),
// shown to the daemon as one ServiceOrchestrator: polling, probes, adoption, records, events,
// views and shutdown cover every pool, and a call about one replica goes to the pool whose
// ids it carries ("<pool service>-<n>"). Each pool's controller drives its pool directly
// (pool(i)), so the scale::ReplicaOrchestrator commands here only route by id; Start, which
// names no pool, is kFailedPrecondition.
//
// Adoption splits the records by id prefix; a record of no pool (the service was aggregated
// before a restart) goes to the first pool marked stopping, which stops it and releases its
// leases.
//
// Ownership: owns the pools' orchestrators and whatever the caller hands it to keep alive for
// them (`keep`, e.g. the alloc::PoolBudget they share), destroyed after the pools.
// Thread-safety: not thread-safe, as every ServiceOrchestrator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "orch/service_orchestrator.h"

namespace gpuscale::orch {

class PooledOrchestrator final : public ServiceOrchestrator {
 public:
  struct Pool {
    std::string service;  // the pool's orchestrator's service name: its ids' prefix
    std::unique_ptr<ServiceOrchestrator> orchestrator;
  };
  // REQUIRES: pools non-empty, every orchestrator non-null.
  PooledOrchestrator(std::shared_ptr<void> keep, std::vector<Pool> pools);
  ~PooledOrchestrator() override;

  ServiceOrchestrator& pool(size_t i) { return *pools_[i].orchestrator; }
  const ServiceOrchestrator& pool(size_t i) const { return *pools_[i].orchestrator; }
  size_t pool_count() const { return pools_.size(); }
  // The pool whose replica `id` is, or -1.
  int PoolOf(const std::string& id) const;

  // scale::ReplicaOrchestrator: every pool's replicas; commands by id.
  std::vector<scale::ReplicaStatus> ListReplicas() const override;
  Result<scale::ReplicaStatus> Start(Seconds now) override;
  Status Place(const std::string& id, Seconds now) override;
  Status Drain(const std::string& id, Seconds now) override;
  Status Resume(const std::string& id, Seconds now) override;
  Status Stop(const std::string& id, Seconds now) override;

  // ServiceOrchestrator: every pool.
  void Poll(Seconds now) override;
  void PrepareProbes(Seconds now) override;
  AdoptionReport Adopt(const std::vector<ReplicaRecord>& records, Seconds now) override;
  Status ReportOutstanding(const std::string& id, int outstanding) override;
  void StopAll(Seconds now) override;
  bool HasProcesses() const override;
  std::vector<ReplicaInfo> Replicas(Seconds now) const override;
  std::vector<ReplicaRecord> Records() const override;
  std::vector<OrchestratorEvent> TakeEvents() override;
  // The pools' capacities summed (name and capabilities of the first).
  scale::AdapterCapacity Capacity(Seconds now) const override;

 private:
  Result<ServiceOrchestrator*> Route(const std::string& id);

  std::shared_ptr<void> keep_;  // declared before pools_: destroyed after them
  std::vector<Pool> pools_;
};

}  // namespace gpuscale::orch
