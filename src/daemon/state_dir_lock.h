// StateDirLock: one daemon per state directory. Two `gpuscale serve` on one state_dir would
// adopt each other's replicas, restart the same crashed replica twice (two processes on one
// GPU) and overwrite each other's rows, so Open() takes an exclusive flock on
// <state_dir>/gpuscale.lock before it reads any state, and holds it for the daemon's life.
// The lock file holds the owner's PID for the error message; the lock itself is the flock,
// which the kernel releases when the process dies (kill -9 included), so a stale file never
// blocks a restart. The descriptor is close-on-exec: replica processes do not inherit it.
//
// Thread-safety: a movable handle; not shared.
#pragma once

#include <string>

#include "core/result.h"

namespace gpuscale::daemon {

class StateDirLock {
 public:
  // Creates `dir` if needed and locks it. Errors: kFailedPrecondition (field state_dir)
  // naming the PID that holds it; kUnavailable when the directory or file cannot be made.
  static Result<StateDirLock> Acquire(const std::string& dir);

  StateDirLock(StateDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StateDirLock& operator=(StateDirLock&& other) noexcept;
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;
  ~StateDirLock();  // releases the lock

 private:
  explicit StateDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gpuscale::daemon
