// SampleKind: what a replica's scrape result in one control tick is, now that a scrape may
// end a tick or more after it started (ReplicaScrapes, replica_scrapes.h). ServiceRuntime
// records only new samples and keeps the previous values of a replica whose scrape is still
// in flight. Plain enum; no I/O.
#pragma once

namespace gpuscale::metrics {

enum class SampleKind {
  kNew,      // a scrape ended since the last tick: the result is its outcome, value or error
  kKept,     // none ended and none is overdue: the replica's previous values stand (it has
             // none before its first scrape ends); the result is not set
  kCarried,  // none ended: the result is an error already reported -- the last scrape's
             // failure (until one succeeds) or the staleness error
};

}  // namespace gpuscale::metrics
