// StoreHealth: which kinds of state-store writes are failing right now ("writing leases",
// "writing replicas of chat", "appending events"), with the last error of each. /readyz
// answers 503 while one is, so that a full disk shows before state is lost; a kind leaves
// when it is written again. Also logs each failure and counts them all
// (gpuscale_store_errors_total).
//
// Thread-safety: thread-safe; owns its lock (the loop, API requests and the task manager's
// event publisher all write through the store).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "core/result.h"

namespace gpuscale::daemon {

class StoreHealth {
 public:
  using LogFn = std::function<void(std::string_view)>;
  explicit StoreHealth(LogFn log) : log_(std::move(log)) {}

  // `what` ("writing replicas of chat") failed with `error`: logged, counted, and shown by
  // /readyz under `kind` ("" = `what`) until Written(kind).
  void Failed(std::string_view what, const Error& error, std::string_view kind = "")
      GS_EXCLUDES(mu_);
  void Written(std::string_view kind) GS_EXCLUDES(mu_);
  // "what: message" of each kind failing now, in kind order; empty when all writes succeed.
  std::vector<std::string> Failures() const GS_EXCLUDES(mu_);
  int64_t error_count() const GS_EXCLUDES(mu_);

 private:
  const LogFn log_;
  mutable Mutex mu_;
  std::map<std::string, std::string, std::less<>> failing_ GS_GUARDED_BY(mu_);
  int64_t errors_ GS_GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscale::daemon
