// StateWriter: writes the control loop's state to the store when it changed, so that a
// restarted daemon adopts what this one ran: each service's replica rows, the lease table,
// and decision rows (when the decision or the replica counts changed, and at least every
// `decision_heartbeat` so that history charts have points on a quiet service). It remembers
// what it last wrote, so an unchanged tick costs no write; a failed write is reported to
// StoreHealth (StoreHealth::Retry::kByWriter) and tried again on the next tick: the same
// rows, or for a decision the next tick's decision, whatever it says.
//
// Thread-safety: thread-safe; owns its lock (the loop writes; task shutdown writes leases).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "state/store_health.h"
#include "store/store.h"

namespace gpuscale::state {

class StateWriter {
 public:
  // Borrows both; they outlive the writer.
  StateWriter(store::Store& store, StoreHealth& health, Seconds decision_heartbeat)
      : store_(store), health_(health), decision_heartbeat_(decision_heartbeat) {}

  // `service`'s replica rows as of `now` (each row's updated_at is set to it); written
  // unless equal to the last rows written for the service.
  void WriteReplicas(const std::string& service, std::vector<store::ReplicaRow> rows, Seconds now)
      GS_EXCLUDES(mu_);
  // The whole lease table; written unless equal to the last one written (the first call
  // always writes: the table may hold a crashed daemon's leases).
  void WriteLeases(std::vector<store::LeaseRow> rows) GS_EXCLUDES(mu_);
  // `row` (its service, at, counts and reason set) when `changed` (the decision or its
  // actions), when its replica counts differ from the last row written for the service, or
  // when the heartbeat is due.
  void WriteDecision(const store::DecisionRow& row, bool changed) GS_EXCLUDES(mu_);
  // The next decision of `service` is written whatever it says (its spec was just replaced).
  void ForgetDecision(const std::string& service) GS_EXCLUDES(mu_);
  // Forgets `service` altogether (it is gone; a new one of that name starts afresh).
  void Forget(const std::string& service) GS_EXCLUDES(mu_);

 private:
  struct Written {
    std::optional<std::vector<store::ReplicaRow>> replicas;
    std::optional<Seconds> decision_at;
    int decision_current = -1;
    int decision_ready = -1;
  };

  store::Store& store_;
  StoreHealth& health_;
  const Seconds decision_heartbeat_;
  Mutex mu_;
  std::map<std::string, Written> written_ GS_GUARDED_BY(mu_);
  std::optional<std::vector<store::LeaseRow>> leases_ GS_GUARDED_BY(mu_);
};

}  // namespace gpuscale::state
