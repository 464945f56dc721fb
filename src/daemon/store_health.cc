#include "daemon/store_health.h"

#include <fmt/format.h>

#include <utility>

namespace gpuscale::daemon {

void StoreHealth::Failed(std::string_view what, const Error& error, std::string_view kind) {
  if (log_) {
    log_(fmt::format("state store: {} failed: {} (the control loop continues)", what,
                     error.ToString()));
  }
  MutexLock lock(mu_);
  ++errors_;
  failing_[std::string(kind.empty() ? what : kind)] = fmt::format("{}: {}", what, error.message);
}

void StoreHealth::Written(std::string_view kind) {
  MutexLock lock(mu_);
  if (auto it = failing_.find(kind); it != failing_.end()) failing_.erase(it);
}

std::vector<std::string> StoreHealth::Failures() const {
  MutexLock lock(mu_);
  std::vector<std::string> failures;
  for (const auto& [kind, message] : failing_) failures.push_back(message);
  return failures;
}

int64_t StoreHealth::error_count() const {
  MutexLock lock(mu_);
  return errors_;
}

}  // namespace gpuscale::daemon
