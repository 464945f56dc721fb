// Which metrics_error / metrics_recovered events one service writes to the event log.
//
// Writing one each time a service's set of metric errors changed flooded the log on a loaded
// machine: replicas' scrapes going stale and fresh again across a fleet wrote 52,786 events
// (17 MB) in an hour at 1,000 services (docs/operations.md), most of the state's growth. Here
// a spell of errors is one event at its start, at most one update per kUpdateEvery while the
// errors change, and one at its end once the metrics have read cleanly for kRecoveredAfter
// (errors back within that time belong to the same spell); a message names at most
// kNamedErrors errors and counts the rest. The current errors are always on the service's
// view and the policy input; only the log is damped.
//
// Pure; one instance per service, used by the control loop alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "events/event_kind.h"

namespace gpuscale::daemon {

class MetricErrorEvents {
 public:
  static constexpr Seconds kUpdateEvery{300};
  static constexpr Seconds kRecoveredAfter{60};
  static constexpr size_t kNamedErrors = 3;

  struct Event {
    events::EventKind kind;  // kMetricsError or kMetricsRecovered
    std::string message;
  };

  // This tick's errors (empty: every metric read); the event to write, if any.
  std::optional<Event> Observe(const std::vector<std::string>& errors, Seconds now);

 private:
  bool in_spell_ = false;
  std::string last_written_;  // the errors the last event named
  std::string last_seen_;     // the errors of the last tick
  Seconds last_event_at_{0};
  std::optional<Seconds> clean_since_;
  int changes_ = 0;  // changes of the errors since the last event
};

// "e1; e2; e3; and 4 more".
std::string SummarizeErrors(const std::vector<std::string>& errors, size_t named);

}  // namespace gpuscale::daemon
