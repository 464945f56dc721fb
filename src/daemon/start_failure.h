// StartFailure: whether a service's replicas cannot start, for the API's view (`failure`),
// the gateway (ServiceRoute::unavailable_reason: requests fail fast instead of waiting out
// the activator's queue_timeout) and the daemon's log.
//
// A service fails to start while none of its replicas is ready and some replica's last
// attempt to start a process failed (orch::ReplicaInfo::start_error: the command is not
// installed, not executable, ...). The log gets one line when that error first shows or
// changes, and one when a replica runs again: not a line per tick of the retries' backoff,
// and not again when a service held at zero drops its failing replica and the next one fails
// the same way.
//
// Pure; one instance per service, used by the control loop alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/service_orchestrator.h"

namespace gpuscale::daemon {

class StartFailure {
 public:
  // This tick's replicas of `service`; the line to log, if any. Updates failure().
  std::optional<std::string> Observe(std::string_view service,
                                     const std::vector<orch::ReplicaInfo>& replicas);
  // Why the service's replicas cannot start now ("" when they can, or none tried).
  const std::string& failure() const { return failure_; }

 private:
  std::string failure_;
  std::string logged_;  // the failure the log last named; "" after a recovery line
};

// The start error of the first replica that has one, when no replica is ready; else "".
std::string StartFailureOf(const std::vector<orch::ReplicaInfo>& replicas);

}  // namespace gpuscale::daemon
