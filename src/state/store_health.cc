#include "state/store_health.h"

#include <fmt/format.h>

#include <utility>

namespace gpuscale::state {

void StoreHealth::Failed(std::string_view what, const Error& error, std::string_view kind,
                         Retry retry) {
  if (log_) {
    log_(fmt::format("state store: {} failed: {} (the control loop continues)", what,
                     error.ToString()));
  }
  MutexLock lock(mu_);
  ++errors_;
  failing_[std::string(kind.empty() ? what : kind)] =
      Failing{fmt::format("{}: {}", what, error.message), retry};
}

void StoreHealth::Written(std::string_view kind) {
  MutexLock lock(mu_);
  if (auto it = failing_.find(kind); it != failing_.end()) failing_.erase(it);
}

std::vector<std::string> StoreHealth::Failures() const {
  MutexLock lock(mu_);
  std::vector<std::string> failures;
  for (const auto& [kind, failing] : failing_) failures.push_back(failing.message);
  return failures;
}

bool StoreHealth::AwaitsProbe() const {
  MutexLock lock(mu_);
  for (const auto& [kind, failing] : failing_) {
    if (failing.retry == Retry::kByProbe) return true;
  }
  return false;
}

void StoreHealth::ProbeSucceeded() {
  MutexLock lock(mu_);
  std::erase_if(failing_, [](const auto& entry) { return entry.second.retry == Retry::kByProbe; });
}

int64_t StoreHealth::error_count() const {
  MutexLock lock(mu_);
  return errors_;
}

}  // namespace gpuscale::state
