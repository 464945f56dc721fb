// ApplyRetry: when the control loop tries again to apply a service's desired state that it
// could not apply (its engine could not be set up, its stored rules could not be read). The
// schedule is the requeue of a Kubernetes controller (client-go's
// ItemExponentialFailureRateLimiter): the first retry one `initial` (the loop interval) after
// the failure, then doubling, capped at `max` (DaemonOptions::apply_retry_max, 60 s).
//
// Value type, pure (time is a parameter); the daemon's loop thread owns one per failing
// service.
#pragma once

#include <string>

#include "core/clock.h"

namespace gpuscale::daemon {

class ApplyRetry {
 public:
  // A failed attempt at `now`. REQUIRES: initial > 0, max >= initial. Returns true when
  // `message` differs from the previous failure's: the event log is told then, not on every
  // retry of the same failure.
  bool Failed(std::string message, Seconds now, Seconds initial, Seconds max);
  // Whether the next attempt is due at `now`.
  bool Due(Seconds now) const { return now >= next_try_; }

  int failures() const { return failures_; }
  const std::string& message() const { return message_; }
  Seconds next_try() const { return next_try_; }

 private:
  int failures_ = 0;
  std::string message_;
  Seconds next_try_{0};
};

}  // namespace gpuscale::daemon
