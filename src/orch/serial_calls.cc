#include "orch/serial_calls.h"

#include <utility>

namespace gpuscale::orch {

SerialCalls::~SerialCalls() {
  {
    MutexLock lock(mu_);
    closing_ = true;
    queue_.clear();
  }
  if (worker_.joinable()) worker_.join();
}

void SerialCalls::Post(Call call) {
  ++pending_;
  if (mode_ == Mode::kInline) {
    Apply apply = call();
    MutexLock lock(mu_);
    done_.push_back(std::move(apply));
    return;
  }
  bool start = false;
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(call));
    start = !running_;
    running_ = true;
  }
  if (!start) return;
  // The last worker set running_ = false as its final step under the lock, so it is ending
  // without touching anything of ours again: joining it here is short.
  if (worker_.joinable()) worker_.join();
  worker_ = std::thread([this] { Work(); });
}

void SerialCalls::Work() {
  for (;;) {
    Call call;
    {
      MutexLock lock(mu_);
      if (queue_.empty() || closing_) {
        running_ = false;
        idle_cv_.NotifyAll();
        return;
      }
      call = std::move(queue_.front());
      queue_.pop_front();
    }
    Apply apply = call();
    MutexLock lock(mu_);
    done_.push_back(std::move(apply));
  }
}

size_t SerialCalls::ApplyDone(Seconds now) {
  std::deque<Apply> done;
  {
    MutexLock lock(mu_);
    done.swap(done_);
  }
  for (Apply& apply : done) {
    --pending_;
    if (apply) apply(now);
  }
  return done.size();
}

void SerialCalls::WaitIdle() {
  MutexLock lock(mu_);
  idle_cv_.Wait(mu_, [this]() GS_REQUIRES(mu_) { return !running_ && queue_.empty(); });
}

}  // namespace gpuscale::orch
