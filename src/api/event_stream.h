// EventStream: the server side of GET /v1/events/stream (server-sent events). Each Poll()
// waits up to options.poll for new events (DaemonApi::WaitForEvents), fetches them with
// DaemonApi::Events and returns them as SSE text:
//
//   id: 42
//   event: replica_started
//   data: {"id":42,"at":"...","service":"chat","kind":"replica_started",...}
//
// plus a `: keepalive` comment when nothing was sent for `keepalive` (so that proxies and
// clients do not drop an idle stream). Resuming: the stream starts after `filter.since_id`
// (from Last-Event-ID or ?since_id); StartAtNewest() skips what is already stored.
//
// With options.poll 0 a Poll() never blocks: the API server calls it when its EventHub says
// that something new arrived, and on a timer for keepalives and gateway_stats.
//
// Thread-safety: one stream per connection, used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "daemon_api/daemon_api.h"

namespace gpuscale::api {

struct EventStreamOptions {
  Seconds poll{0.25};     // longest wait per Poll()
  Seconds keepalive{15};  // idle time before a `: keepalive` comment
  int batch = 500;        // most events fetched per Events() call
  // Every this often (and on the first poll) a `gateway_stats` event without an id carries
  // each service's gateway figures (GET /v1/services' `gateway`): live request rate and
  // latency for dashboards, never stored, so it does not move the resume point. 0 = never.
  Seconds stats_interval{5};
  // Where gateway_stats reads the services (the API server shares one cached list among
  // all streams: EventHub::Services); empty = DaemonApi::ListServices at each stats event.
  std::function<std::shared_ptr<const std::vector<daemon::ServiceView>>()> services;
};

// One event as SSE text ("id: ...\nevent: ...\ndata: ...\n\n").
std::string FormatSseEvent(const daemon::EventView& event);

class EventStream {
 public:
  // `filter`: since_id = resume point; service and kind filter the stream ("" / none = all).
  EventStream(daemon::DaemonApi& daemon, daemon::EventQuery filter, EventStreamOptions options);

  // Moves the resume point to the newest stored event (a stream without Last-Event-ID shows
  // only what happens from now on).
  void StartAtNewest();

  // Waits up to options.poll for events after the resume point and returns them as SSE text
  // (or a keepalive comment, or "" when there is nothing to send yet). Errors: those of
  // DaemonApi::Events (the caller ends the stream).
  Result<std::string> Poll();

  int64_t last_id() const { return filter_.since_id; }

 private:
  daemon::DaemonApi& daemon_;
  daemon::EventQuery filter_;
  EventStreamOptions options_;
  std::chrono::steady_clock::time_point last_write_;
  std::optional<std::chrono::steady_clock::time_point> last_stats_;
};

// The `gateway_stats` SSE block for `services` ("" when none has gateway figures):
//   event: gateway_stats
//   data: {"services": {"chat": {"request_rate_per_second": 3.2, ...}}}
std::string FormatGatewayStats(const std::vector<daemon::ServiceView>& services,
                               const std::string& only_service);

}  // namespace gpuscale::api
