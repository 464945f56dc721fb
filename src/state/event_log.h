// EventLog: the daemon's event history. Appends go to the store's events table (a failed
// append is reported to StoreHealth and the event is dropped, never retried out of order);
// readers query it, and SSE streams wait here for an id newer than the last they sent.
//
// Thread-safety: thread-safe; owns its lock. The loop, API requests and the task manager's
// publisher append from their own threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "events/event_kind.h"
#include "state/store_health.h"
#include "store/event_repository.h"

namespace gpuscale::state {

// An event row stamped `now`, its kind by the wire name (store::EventRow has no constructor).
store::EventRow MakeEvent(Seconds now, std::string service, events::EventKind kind,
                          std::string replica, std::string message);

class EventLog {
 public:
  // Borrows both; they outlive the log. Call Open() before the first append or wait.
  EventLog(store::EventRepository& events, StoreHealth& health)
      : events_(events), health_(health) {}

  // Reads the newest stored id, so waiters see only events appended after it.
  Status Open() GS_EXCLUDES(mu_);
  // Appends `events` in order, then clears it; wakes waiters when any was stored.
  void Append(std::vector<store::EventRow>& events) GS_EXCLUDES(mu_);
  Result<std::vector<store::EventRow>> Query(const store::EventQuery& query);
  // Blocks until an event newer than `after_id` exists, `timeout` passes or Stop(); returns
  // the newest id (at least `after_id`).
  int64_t WaitAfter(int64_t after_id, Seconds timeout) GS_EXCLUDES(mu_);
  // Wakes every waiter now and from then on (shutdown).
  void Stop() GS_EXCLUDES(mu_);

 private:
  store::EventRepository& events_;
  StoreHealth& health_;
  Mutex mu_;
  CondVar appended_;
  int64_t latest_ GS_GUARDED_BY(mu_) = 0;
  bool stopped_ GS_GUARDED_BY(mu_) = false;
};

}  // namespace gpuscale::state
