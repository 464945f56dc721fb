#include "alloc/gpu_waiter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpuscale::alloc {
namespace {

Status ValidateOptions(const WaitOptions& options) {
  if (!(options.timeout.count() >= 0) || !std::isfinite(options.timeout.count())) {
    return InvalidArgument("expected a non-negative number of seconds", "timeout");
  }
  if (!(options.interval.count() > 0) || !std::isfinite(options.interval.count())) {
    return InvalidArgument("expected a positive number of seconds", "interval");
  }
  return OkStatus();
}

// One check: the selection, or why it does not fit (kResourceExhausted / kUnavailable), or
// an error that must end the wait.
Result<Selection> Check(const SelectionRequest& request, const SnapshotReader& read) {
  GS_ASSIGN_OR_RETURN(gpu::GpuSnapshot snapshot, read());
  return SelectGpus(snapshot, request);
}

bool Retryable(const Error& error) {
  return error.code == ErrorCode::kResourceExhausted || error.code == ErrorCode::kUnavailable;
}

}  // namespace

Result<WaitResult> WaitForGpus(const SelectionRequest& request, const SnapshotReader& read,
                               const Clock& clock, const Sleeper& sleep, const WaitOptions& options,
                               const ProgressReporter& progress) {
  GS_RETURN_IF_ERROR(ValidateRequest(request));
  GS_RETURN_IF_ERROR(ValidateOptions(options));
  const Seconds start = clock.Now();
  // Time asked to sleep so far: the wait ends even with a clock that does not advance.
  Seconds slept{0};
  for (int checks = 1;; ++checks) {
    Result<Selection> selection = Check(request, read);
    const Seconds elapsed = std::max(clock.Now() - start, slept);
    if (selection) return WaitResult{std::move(*selection), checks, elapsed};
    if (!Retryable(selection.error())) return Unexpected<Error>(std::move(selection).error());
    const Seconds remaining = options.timeout - elapsed;
    if (remaining <= Seconds{0}) {
      return DeadlineExceeded(fmt::format("no {} GPU{} after {:.4g} s ({} check{}): {}",
                                          request.gpu_count, request.gpu_count == 1 ? "" : "s",
                                          elapsed.count(), checks, checks == 1 ? "" : "s",
                                          selection.error().ToString()));
    }
    if (progress) progress(WaitProgress{checks, elapsed, remaining, selection.error()});
    const Seconds pause = std::min(options.interval, remaining);
    sleep(pause);
    slept += pause;
  }
}

}  // namespace gpuscale::alloc
