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
// Ownership: owns the calls and their answers. Destruction returns at once: it drops the
// calls not yet started and the answers not applied, and a call still running finishes on
// its thread (which holds the queue's state) with its answer dropped. So a call must own
// what it uses (copies, a shared_ptr to a thread-safe transport), never its owner's members;
// its answer (Apply) runs only on the owner's thread and may use the owner.
// Thread-safety: Post, ApplyDone, pending() and WaitIdle from the owner's thread; the calls
// run on the worker thread.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
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
  // Shared with the worker thread, which may outlive this object by one call.
  struct State {
    Mutex mu;
    CondVar idle_cv;
    std::deque<Call> queue GS_GUARDED_BY(mu);
    std::deque<Apply> done GS_GUARDED_BY(mu);
    bool running GS_GUARDED_BY(mu) = false;  // a worker is between its start and its end
    bool closing GS_GUARDED_BY(mu) = false;  // the owner is gone
  };
  static void Work(State& state);

  const Mode mode_;
  size_t pending_ = 0;  // the owner's thread only
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace gpuscale::orch
