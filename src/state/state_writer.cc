#include "state/state_writer.h"

#include <utility>

namespace gpuscale::state {
namespace {
// Failure kinds /readyz shows while the write fails (StoreHealth); a service's replicas are
// a kind of their own ("writing replicas of chat").
constexpr std::string_view kWritingLeases = "writing leases";
constexpr std::string_view kWritingDecisions = "writing decisions";
}  // namespace

void StateWriter::WriteReplicas(const std::string& service, std::vector<store::ReplicaRow> rows,
                                Seconds now) {
  MutexLock lock(mu_);
  std::optional<std::vector<store::ReplicaRow>>& last = written_[service].replicas;
  // Compared before stamping updated_at: a row that only got older is not a change.
  if (last && *last == rows) return;
  std::vector<store::ReplicaRow> stamped = rows;
  for (store::ReplicaRow& row : stamped) row.updated_at = now;
  const std::string what = "writing replicas of " + service;  // also its failure kind
  if (Status s = store_.replicas().ReplaceForService(service, stamped); !s) {
    return health_.Failed(what, s.error(), "", StoreHealth::Retry::kByWriter);
  }
  health_.Written(what);
  last = std::move(rows);
}

void StateWriter::WriteLeases(std::vector<store::LeaseRow> rows) {
  MutexLock lock(mu_);
  if (leases_ && *leases_ == rows) return;
  if (Status s = store_.leases().ReplaceAll(rows); !s) {
    return health_.Failed(kWritingLeases, s.error(), "", StoreHealth::Retry::kByWriter);
  }
  health_.Written(kWritingLeases);
  leases_ = std::move(rows);
}

void StateWriter::WriteDecision(const store::DecisionRow& row, bool changed) {
  MutexLock lock(mu_);
  Written& last = written_[row.service];
  const bool counts_changed =
      row.current_replicas != last.decision_current || row.ready_replicas != last.decision_ready;
  const bool due = !last.decision_at || row.at - *last.decision_at >= decision_heartbeat_;
  if (!changed && !counts_changed && !due) return;
  if (Result<int64_t> id = store_.decisions().Append(row); !id) {
    // Nothing recorded: the next tick's decision is written whatever it says, so the
    // failure is retried (and readiness returns) as soon as the store takes writes again.
    last.decision_at.reset();
    last.decision_current = last.decision_ready = -1;
    health_.Failed("writing a decision of " + row.service, id.error(), kWritingDecisions,
                   StoreHealth::Retry::kByWriter);
    return;
  }
  last.decision_at = row.at;
  last.decision_current = row.current_replicas;
  last.decision_ready = row.ready_replicas;
  health_.Written(kWritingDecisions);
}

void StateWriter::ForgetDecision(const std::string& service) {
  MutexLock lock(mu_);
  if (auto it = written_.find(service); it != written_.end()) {
    it->second.decision_at.reset();
    it->second.decision_current = it->second.decision_ready = -1;
  }
}

void StateWriter::Forget(const std::string& service) {
  MutexLock lock(mu_);
  written_.erase(service);
  health_.Written("writing replicas of " + service);  // no writer retries it any more
}

}  // namespace gpuscale::state
