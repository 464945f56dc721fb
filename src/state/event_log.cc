#include "state/event_log.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace gpuscale::state {
namespace {
// The failure kind /readyz shows while appends fail (StoreHealth).
constexpr std::string_view kAppendingEvents = "appending events";
}  // namespace

store::EventRow MakeEvent(Seconds now, std::string service, events::EventKind kind,
                          std::string replica, std::string message) {
  store::EventRow e;
  e.at = now;
  e.service = std::move(service);
  e.kind = events::EventKindName(kind);
  e.replica = std::move(replica);
  e.message = std::move(message);
  return e;
}

Status EventLog::Open() {
  GS_ASSIGN_OR_RETURN(int64_t latest, events_.LatestId());
  MutexLock lock(mu_);
  latest_ = latest;
  return OkStatus();
}

void EventLog::Append(std::vector<store::EventRow>& events) {
  int64_t latest = 0;
  bool last_written = false;
  for (store::EventRow& e : events) {
    Result<int64_t> id = events_.Append(e);
    last_written = id.has_value();
    if (!id) {
      health_.Failed("appending event " + e.kind, id.error(), kAppendingEvents);
      continue;
    }
    latest = *id;
  }
  events.clear();
  if (last_written) health_.Written(kAppendingEvents);
  if (latest == 0) return;
  {
    MutexLock lock(mu_);
    latest_ = std::max(latest_, latest);
  }
  appended_.NotifyAll();
}

Result<std::vector<store::EventRow>> EventLog::Query(const store::EventQuery& query) {
  return events_.Query(query);
}

int64_t EventLog::WaitAfter(int64_t after_id, Seconds timeout) {
  MutexLock lock(mu_);
  appended_.WaitFor(mu_, timeout,
                    [&]() GS_REQUIRES(mu_) { return latest_ > after_id || stopped_; });
  return std::max(latest_, after_id);
}

void EventLog::Stop() {
  {
    MutexLock lock(mu_);
    stopped_ = true;
  }
  appended_.NotifyAll();
}

}  // namespace gpuscale::state
