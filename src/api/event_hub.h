// EventHub: the one thread that waits for the daemon's new events on behalf of every open
// event stream (GET /v1/events/stream). Streams do not block a thread each: they subscribe a
// wake-up, and the hub calls every wake-up when DaemonApi::WaitForEvents reports a newer id
// (and once more on Stop, so that streams end). It also keeps the service list that the
// streams' `gateway_stats` events read, fetched at most once per interval for all streams
// instead of once per stream.
//
// Thread-safety: every method may be called from any thread. Wake-ups run on the hub's
// thread (or the caller of Stop) and must not block: they post to the stream's executor.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "daemon_api/daemon_api.h"

namespace gpuscale::api {

class EventHub {
 public:
  // `poll`: the longest single WaitForEvents (bounds how long Stop waits for the thread).
  EventHub(daemon::DaemonApi& daemon, Seconds poll);
  ~EventHub();  // Stop()
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Ends the thread and calls every wake-up once more. Idempotent.
  void Stop();

  using Wake = std::function<void()>;
  // Registers `wake` (the first subscriber starts the thread, so a server that never streams
  // never waits on it); returns a handle for Unsubscribe.
  int64_t Subscribe(Wake wake);
  void Unsubscribe(int64_t handle);
  int subscribers() const;

  // The services for `gateway_stats`: DaemonApi::ListServices at most once per `max_age`.
  std::shared_ptr<const std::vector<daemon::ServiceView>> Services(Seconds max_age);

 private:
  void Run();
  void WakeAll();

  daemon::DaemonApi& daemon_;
  const Seconds poll_;
  mutable std::mutex mu_;
  std::thread thread_;  // guarded by mu_
  bool stop_ = false;  // guarded by mu_
  int64_t next_handle_ = 1;
  std::map<int64_t, Wake> wakes_;  // guarded by mu_
  std::mutex services_mu_;
  std::shared_ptr<const std::vector<daemon::ServiceView>> services_;  // guarded by services_mu_
  std::optional<std::chrono::steady_clock::time_point> services_at_;  // guarded by services_mu_
};

}  // namespace gpuscale::api
