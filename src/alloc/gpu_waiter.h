// Waiting for GPUs: poll GPU readings until a request fits or a timeout passes (reference
// 000's wait-for-availability: 300 s timeout, 30 s interval by default).
//
// The waiter stays pure: it reads snapshots, time and sleeps only through what it is given
// (a snapshot-reading callable, a Clock& and a sleep callable), so tests drive it with a
// ManualClock whose "sleep" advances the clock, and the CLI passes a backend, SystemClock
// and std::this_thread::sleep_for.
//
// Polling: check at start; while it does not fit and time remains, sleep
// min(interval, time left) and check again, so the last check falls on the deadline.
// A reading that fails with kUnavailable (driver busy, tool timed out) counts as "not yet"
// and is retried; any other reading error ends the wait at once.
//
// Thread-safety: a function; the callables are called on the caller's thread.
#pragma once

#include <functional>

#include "alloc/gpu_selector.h"
#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_info.h"

namespace gpuscale::alloc {

struct WaitOptions {
  Seconds timeout{300};  // give up after this long; 0 = check once
  Seconds interval{30};  // between checks; > 0
};

struct WaitProgress {
  int checks = 0;        // checks done so far
  Seconds elapsed{0};    // since the wait began
  Seconds remaining{0};  // until the timeout
  Error last;            // why the last check did not fit
};

struct WaitResult {
  Selection selection;  // the GPUs that fit at the last check
  int checks = 0;
  Seconds waited{0};
};

using SnapshotReader = std::function<Result<gpu::GpuSnapshot>()>;
using Sleeper = std::function<void(Seconds)>;
// Called after every check that did not fit and before sleeping (the CLI prints a line).
using ProgressReporter = std::function<void(const WaitProgress&)>;

// Errors: kInvalidArgument for a bad request or options (field "timeout"/"interval");
// kDeadlineExceeded on timeout: "no 4 GPUs after 300 s (11 checks): need 4 GPUs, 2 of 8
// eligible ..." (the last check's reason); a reading error other than kUnavailable as is.
Result<WaitResult> WaitForGpus(const SelectionRequest& request, const SnapshotReader& read,
                               const Clock& clock, const Sleeper& sleep,
                               const WaitOptions& options = {},
                               const ProgressReporter& progress = {});

}  // namespace gpuscale::alloc
