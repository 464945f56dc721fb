// HistoryRetention: keeps the state database's history (decision and event rows: the only
// tables that grow with time rather than with the fleet) within the `retention:` section's
// age and size. Called once per control tick; it does work only when some is due, and
// never more than a bounded batch per call, so a large backlog (a lowered cap, a daemon
// started on an old database) is worked off over several ticks instead of holding one.
//
//   age:  rows older than max_age go, checked hourly (every tick while a batch came back
//         full);
//   size: when the database's used pages pass max_bytes, the oldest tenth of the history's
//         time span goes (decisions and events alike: the same cut time for both), tick
//         after tick until the used pages are under 90 % of the cap. Checked every minute.
//         Freed pages are reused by later rows, so the file stays near the cap without VACUUM.
//         Other tables (services, replicas, tasks) are never trimmed: if they alone pass
//         the cap, Run says so once (Trimmed::stuck) and waits a minute before trying again.
//
// Ownership: borrows the Store. Thread-safety: thread-compatible (the control loop's thread).
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "state/retention_config.h"
#include "store/store.h"

namespace gpuscale::state {

class HistoryRetention {
 public:
  // Rows one table loses per call at most: ~5-20 ms of SQLite's time on this project's CI
  // machine type, well inside a tick, and a thousand times what 1,000 services write a tick.
  static constexpr int64_t kBatch = 5000;

  explicit HistoryRetention(store::Store& store) : store_(store) {}

  struct Trimmed {
    int64_t by_age = 0;   // rows deleted for their age
    int64_t by_size = 0;  // rows deleted for the size cap
    // Set once when the cap cannot be met by trimming history (what to do, in words); empty
    // otherwise.
    std::string stuck;
  };
  // Deletes what `config` says is due at `now`. Errors: the store's (the next call tries
  // again).
  Result<Trimmed> Run(const RetentionConfig& config, Seconds now);

 private:
  struct AgeRound {
    int64_t deleted = 0;
    bool more = false;  // a table's batch came back full: more may be left
  };
  Result<AgeRound> TrimAge(Seconds before);
  // Rows deleted; sets `stuck` as Trimmed::stuck says.
  Result<int64_t> TrimSize(const RetentionConfig& config, Seconds now, std::string& stuck);

  store::Store& store_;
  Seconds next_age_check_{-1};  // <0: at the first call
  Seconds next_size_check_{-1};
  bool trimming_size_ = false;   // over the cap: trim again next call
  bool stuck_reported_ = false;  // Trimmed::stuck said once for this spell
};

}  // namespace gpuscale::state
