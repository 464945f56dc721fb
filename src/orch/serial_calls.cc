#include "orch/serial_calls.h"

#include <utility>

namespace gpuscale::orch {

SerialCalls::~SerialCalls() {
  // Calls not started are dropped; a running one finishes on its detached thread, which
  // holds the state, and its answer is dropped with it.
  MutexLock lock(state_->mu);
  state_->closing = true;
  state_->queue.clear();
  state_->done.clear();
}

void SerialCalls::Post(Call call) {
  ++pending_;
  State& s = *state_;
  if (mode_ == Mode::kInline) {
    Apply apply = call();
    MutexLock lock(s.mu);
    s.done.push_back(std::move(apply));
    return;
  }
  bool start = false;
  {
    MutexLock lock(s.mu);
    s.queue.push_back(std::move(call));
    start = !s.running;
    s.running = true;
  }
  // Detached: the owner never waits for a call (a hung controller must not hold the
  // daemon's tick when a service is deleted or replaced); the thread keeps the state alive.
  if (start) std::thread([state = state_] { Work(*state); }).detach();
}

void SerialCalls::Work(State& s) {
  for (;;) {
    Call call;
    {
      MutexLock lock(s.mu);
      if (s.queue.empty() || s.closing) {
        s.running = false;
        s.idle_cv.NotifyAll();
        return;
      }
      call = std::move(s.queue.front());
      s.queue.pop_front();
    }
    Apply apply = call();
    MutexLock lock(s.mu);
    if (!s.closing) s.done.push_back(std::move(apply));
  }
}

size_t SerialCalls::ApplyDone(Seconds now) {
  std::deque<Apply> done;
  {
    MutexLock lock(state_->mu);
    done.swap(state_->done);
  }
  for (Apply& apply : done) {
    --pending_;
    if (apply) apply(now);
  }
  return done.size();
}

void SerialCalls::WaitIdle() {
  State& s = *state_;
  MutexLock lock(s.mu);
  s.idle_cv.Wait(s.mu, [&s]() GS_REQUIRES(s.mu) { return !s.running && s.queue.empty(); });
}

}  // namespace gpuscale::orch
