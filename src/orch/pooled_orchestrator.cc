#include "orch/pooled_orchestrator.h"

#include <fmt/format.h>

#include <utility>

namespace gpuscale::orch {

PooledOrchestrator::PooledOrchestrator(std::shared_ptr<void> keep, std::vector<Pool> pools)
    : keep_(std::move(keep)), pools_(std::move(pools)) {}

PooledOrchestrator::~PooledOrchestrator() = default;

int PooledOrchestrator::PoolOf(const std::string& id) const {
  for (size_t i = 0; i < pools_.size(); ++i) {
    const std::string prefix = pools_[i].service + "-";
    if (id.size() > prefix.size() && id.compare(0, prefix.size(), prefix) == 0) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Result<ServiceOrchestrator*> PooledOrchestrator::Route(const std::string& id) {
  const int pool = PoolOf(id);
  if (pool < 0) return NotFound(fmt::format("no replica '{}'", id), "replica");
  return pools_[static_cast<size_t>(pool)].orchestrator.get();
}

std::vector<scale::ReplicaStatus> PooledOrchestrator::ListReplicas() const {
  std::vector<scale::ReplicaStatus> out;
  for (const Pool& p : pools_) {
    for (scale::ReplicaStatus& r : p.orchestrator->ListReplicas()) out.push_back(std::move(r));
  }
  return out;
}

Result<scale::ReplicaStatus> PooledOrchestrator::Start(Seconds /*now*/) {
  return FailedPrecondition("a pooled service starts replicas through one of its pools");
}

Status PooledOrchestrator::Place(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(ServiceOrchestrator * pool, Route(id));
  return pool->Place(id, now);
}

Status PooledOrchestrator::Drain(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(ServiceOrchestrator * pool, Route(id));
  return pool->Drain(id, now);
}

Status PooledOrchestrator::Resume(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(ServiceOrchestrator * pool, Route(id));
  return pool->Resume(id, now);
}

Status PooledOrchestrator::Stop(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(ServiceOrchestrator * pool, Route(id));
  return pool->Stop(id, now);
}

void PooledOrchestrator::Poll(Seconds now) {
  for (Pool& p : pools_) p.orchestrator->Poll(now);
}

void PooledOrchestrator::PrepareProbes(Seconds now) {
  for (Pool& p : pools_) p.orchestrator->PrepareProbes(now);
}

AdoptionReport PooledOrchestrator::Adopt(const std::vector<ReplicaRecord>& records, Seconds now) {
  std::vector<std::vector<ReplicaRecord>> by_pool(pools_.size());
  for (const ReplicaRecord& record : records) {
    const int pool = PoolOf(record.id);
    by_pool[pool < 0 ? 0 : static_cast<size_t>(pool)].push_back(record);
    // A replica of no pool (the service had another shape before): stopped, leases released.
    if (pool < 0) by_pool[0].back().stopping = true;
  }
  AdoptionReport report;
  for (size_t i = 0; i < pools_.size(); ++i) {
    AdoptionReport one = pools_[i].orchestrator->Adopt(by_pool[i], now);
    using List = std::vector<std::string> AdoptionReport::*;
    for (List list :
         {&AdoptionReport::adopted, &AdoptionReport::cleaned_up, &AdoptionReport::errors,
          &AdoptionReport::other_state_dir}) {
      (report.*list).insert((report.*list).end(), (one.*list).begin(), (one.*list).end());
    }
  }
  return report;
}

Status PooledOrchestrator::ReportOutstanding(const std::string& id, int outstanding) {
  GS_ASSIGN_OR_RETURN(ServiceOrchestrator * pool, Route(id));
  return pool->ReportOutstanding(id, outstanding);
}

void PooledOrchestrator::StopAll(Seconds now) {
  for (Pool& p : pools_) p.orchestrator->StopAll(now);
}

bool PooledOrchestrator::HasProcesses() const {
  for (const Pool& p : pools_) {
    if (p.orchestrator->HasProcesses()) return true;
  }
  return false;
}

std::vector<ReplicaInfo> PooledOrchestrator::Replicas(Seconds now) const {
  std::vector<ReplicaInfo> out;
  for (const Pool& p : pools_) {
    for (ReplicaInfo& r : p.orchestrator->Replicas(now)) out.push_back(std::move(r));
  }
  return out;
}

std::vector<ReplicaRecord> PooledOrchestrator::Records() const {
  std::vector<ReplicaRecord> out;
  for (const Pool& p : pools_) {
    for (ReplicaRecord& r : p.orchestrator->Records()) out.push_back(std::move(r));
  }
  return out;
}

std::vector<OrchestratorEvent> PooledOrchestrator::TakeEvents() {
  std::vector<OrchestratorEvent> out;
  for (Pool& p : pools_) {
    for (OrchestratorEvent& e : p.orchestrator->TakeEvents()) out.push_back(std::move(e));
  }
  return out;
}

scale::AdapterCapacity PooledOrchestrator::Capacity(Seconds now) const {
  scale::AdapterCapacity total = pools_.front().orchestrator->Capacity(now);
  for (size_t i = 1; i < pools_.size(); ++i) {
    total.max_worker_groups += pools_[i].orchestrator->Capacity(now).max_worker_groups;
  }
  return total;
}

}  // namespace gpuscale::orch
