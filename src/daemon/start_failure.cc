#include "daemon/start_failure.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuscale::daemon {

std::string StartFailureOf(const std::vector<orch::ReplicaInfo>& replicas) {
  const auto ready = [](const orch::ReplicaInfo& r) {
    return r.phase == scale::ReplicaPhase::kReady && r.state != orch::ReplicaState::kStopping;
  };
  if (std::any_of(replicas.begin(), replicas.end(), ready)) return "";
  for (const orch::ReplicaInfo& r : replicas) {
    if (!r.start_error.empty() && r.state != orch::ReplicaState::kStopping) return r.start_error;
  }
  return "";
}

std::optional<std::string> StartFailure::Observe(std::string_view service,
                                                 const std::vector<orch::ReplicaInfo>& replicas) {
  failure_ = StartFailureOf(replicas);
  if (!failure_.empty()) {
    if (failure_ == logged_) return std::nullopt;
    logged_ = failure_;
    return fmt::format(
        "service '{}' cannot start replicas: {} (retried with backoff; requests "
        "to it through the gateway get 503 until one starts)",
        service, failure_);
  }
  // Recovered only when a process runs: a service that merely has no replica now (held at
  // zero) may fail the same way on its next one, which is not worth a second line.
  const bool running =
      std::any_of(replicas.begin(), replicas.end(), [](const orch::ReplicaInfo& r) {
        return r.pid > 0 || r.phase == scale::ReplicaPhase::kReady;
      });
  if (logged_.empty() || !running) return std::nullopt;
  logged_.clear();
  return fmt::format("service '{}' starts replicas again", service);
}

}  // namespace gpuscale::daemon
