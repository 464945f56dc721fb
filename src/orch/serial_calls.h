// SerialCalls: an engine's blocking calls (a Slurm listing, sbatch, scancel, a fleet's
// control API) run one at a time, in the order they were posted, on a thread of their own,
// so that a slow or hung controller delays only the service whose engine it is, never the
// control loop's tick. The owner's thread posts a call; the call returns the step that
// applies its answer, and the owner runs those steps at its next ApplyDone(), oldest first.
//
// The order is the point: a job listing posted after an sbatch runs after the sbatch
// returned, so it sees the new job; a listing that ran before the sbatch is applied before
// the sbatch's answer, while the replica still has no job id, so a new job never looks
// vanished to its owner (which would resubmit it: two jobs for one replica).
//
// The thread is started by Post when none runs and ends when the queue is empty, so an
// engine that is not called holds no thread. Mode::kInline runs each call inside Post on the
// caller's thread (tests that step time by hand); its answers are still applied only by
// ApplyDone, so both modes apply in the same places.
//
// Ownership: owns the calls and their answers. Destruction drops calls not yet started and
// waits for the running one (at most its own timeout), so a call may use its owner's members
// that are declared before its SerialCalls.
// Thread-safety: Post, ApplyDone and pending() from the owner's thread; the calls run on the
// worker thread and must touch only what is safe there (a thread-safe transport, copies).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace gpuscale::orch {

class SerialCalls {
 public:
  // Runs on the owner's thread at ApplyDone(now).
  using Apply = std::function<void(Seconds now)>;
  // Runs on the worker thread; returns how to apply its answer (empty: nothing to apply).
  using Call = std::function<Apply()>;
  enum class Mode { kThread, kInline };

  explicit SerialCalls(Mode mode = Mode::kThread) : mode_(mode) {}
  ~SerialCalls();
  SerialCalls(const SerialCalls&) = delete;
  SerialCalls& operator=(const SerialCalls&) = delete;

  void Post(Call call);
  // Applies the answers of the calls that finished, in posting order. Returns how many.
  size_t ApplyDone(Seconds now);
  // Calls posted whose answers are not applied yet (queued, running or finished).
  size_t pending() const { return pending_; }
  // Blocks until every posted call has finished (its answer waits for ApplyDone).
  void WaitIdle();

 private:
  void Work();

  const Mode mode_;
  size_t pending_ = 0;  // the owner's thread only
  Mutex mu_;
  CondVar idle_cv_;
  std::deque<Call> queue_ GS_GUARDED_BY(mu_);
  std::deque<Apply> done_ GS_GUARDED_BY(mu_);
  bool running_ GS_GUARDED_BY(mu_) = false;  // the worker is between its start and its end
  bool closing_ GS_GUARDED_BY(mu_) = false;
  std::thread worker_;  // the owner's thread starts and joins it
};

}  // namespace gpuscale::orch
