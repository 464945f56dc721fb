// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable_any with clang's
// thread-safety annotations (core/thread_annotations.h), so that members marked
// GS_GUARDED_BY(mu_) are checked at compile time in the clang build. No other behaviour.
//
// Thread-safety: that is what they are for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/thread_annotations.h"

namespace gpuscale {

class GS_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() GS_ACQUIRE() { mu_.lock(); }
  void Unlock() GS_RELEASE() { mu_.unlock(); }
  // BasicLockable spellings, for CondVar's std::condition_variable_any.
  void lock() GS_ACQUIRE() { mu_.lock(); }
  void unlock() GS_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope.
class GS_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) GS_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() GS_RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Waits release `mu` while blocked and hold it again when they return, as with
// std::condition_variable. Predicates run with `mu` held: annotate a predicate lambda
// GS_REQUIRES(mu) when it reads guarded members.
class CondVar {
 public:
  void NotifyAll() { cv_.notify_all(); }
  void NotifyOne() { cv_.notify_one(); }
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout, Predicate ready)
      GS_REQUIRES(mu) {
    return cv_.wait_for(mu, timeout, ready);
  }
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<Clock, Duration> deadline, Predicate ready)
      GS_REQUIRES(mu) {
    return cv_.wait_until(mu, deadline, ready);
  }
  template <typename Predicate>
  void Wait(Mutex& mu, Predicate ready) GS_REQUIRES(mu) {
    cv_.wait(mu, ready);
  }

 private:
  std::condition_variable_any cv_;
};

}  // namespace gpuscale
