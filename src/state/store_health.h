// StoreHealth: which kinds of state-store writes are failing right now ("writing leases",
// "writing replicas of chat", "appending events", an API request's write), with the last
// error of each. /readyz answers 503 from the moment one fails, so that a full disk shows
// before state is lost. A kind leaves when it is written again: the loop retries its own
// writes (replicas, leases, decisions) every tick (Retry::kByWriter); the others (events, API
// requests, start-up clean-ups) nothing retries, so they leave when a probe write succeeds
// (Retry::kByProbe, ProbeSucceeded: the daemon probes on each tick while AwaitsProbe()), and
// readiness returns once the disk is freed without waiting for an unrelated write. Also logs
// each failure and counts them all (gpuscale_store_errors_total).
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

namespace gpuscale::state {

class StoreHealth {
 public:
  using LogFn = std::function<void(std::string_view)>;
  // Who notices that a failing kind of write works again.
  enum class Retry {
    kByProbe,   // nothing writes it again: a successful probe write clears it
    kByWriter,  // its writer retries it every tick: only its own success clears it
  };
  explicit StoreHealth(LogFn log) : log_(std::move(log)) {}

  // `what` ("writing replicas of chat") failed with `error`: logged, counted, and shown by
  // /readyz under `kind` ("" = `what`) until Written(kind) (or, for kByProbe, a successful
  // probe).
  void Failed(std::string_view what, const Error& error, std::string_view kind = "",
              Retry retry = Retry::kByProbe) GS_EXCLUDES(mu_);
  void Written(std::string_view kind) GS_EXCLUDES(mu_);
  // True while a kByProbe kind is failing: the daemon's tick then runs a probe write.
  bool AwaitsProbe() const GS_EXCLUDES(mu_);
  // A probe write succeeded: the kByProbe kinds leave.
  void ProbeSucceeded() GS_EXCLUDES(mu_);
  // "what: message" of each kind failing now, in kind order; empty when all writes succeed.
  std::vector<std::string> Failures() const GS_EXCLUDES(mu_);
  int64_t error_count() const GS_EXCLUDES(mu_);

 private:
  const LogFn log_;
  mutable Mutex mu_;
  struct Failing {
    std::string message;  // "what: error"
    Retry retry = Retry::kByProbe;
  };
  std::map<std::string, Failing, std::less<>> failing_ GS_GUARDED_BY(mu_);
  int64_t errors_ GS_GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscale::state
