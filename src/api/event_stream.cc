#include "api/event_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "api/json_views.h"
#include "events/event_kind.h"

namespace gpuscale::api {

std::string FormatSseEvent(const daemon::EventView& event) {
  // SSE fields end at a newline; JSON dump() without indent escapes every newline inside
  // strings, and the kind is our own identifier, but strip line breaks defensively.
  std::string kind = event.kind;
  std::replace(kind.begin(), kind.end(), '\n', ' ');
  std::replace(kind.begin(), kind.end(), '\r', ' ');
  return fmt::format("id: {}\nevent: {}\ndata: {}\n\n", event.id, kind.empty() ? "event" : kind,
                     EventJson(event).dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::string FormatGatewayStats(const std::vector<daemon::ServiceView>& services,
                               const std::string& only_service) {
  Json by_service = Json::object();
  for (const daemon::ServiceView& s : services) {
    if (!s.gateway || (!only_service.empty() && s.config.name != only_service)) continue;
    by_service[s.config.name] = GatewayJson(s.gateway);
  }
  if (by_service.empty()) return "";
  const Json data{{"services", std::move(by_service)}};
  return fmt::format("event: {}\ndata: {}\n\n",
                     events::EventKindName(events::EventKind::kGatewayStats),
                     data.dump(-1, ' ', false, Json::error_handler_t::replace));
}

EventStream::EventStream(daemon::DaemonApi& daemon, daemon::EventQuery filter,
                         EventStreamOptions options)
    : daemon_(daemon),
      filter_(std::move(filter)),
      options_(options),
      last_write_(std::chrono::steady_clock::now()) {
  filter_.limit = std::max(1, options_.batch);
}

void EventStream::StartAtNewest() {
  filter_.since_id = std::max(filter_.since_id, daemon_.WaitForEvents(0, Seconds{0}));
}

Result<std::string> EventStream::Poll() {
  const int64_t newest = daemon_.WaitForEvents(filter_.since_id, options_.poll);
  std::string text;
  if (newest > filter_.since_id) {
    GS_ASSIGN_OR_RETURN(std::vector<daemon::EventView> events, daemon_.Events(filter_));
    for (const daemon::EventView& event : events) {
      text += FormatSseEvent(event);
      filter_.since_id = std::max(filter_.since_id, event.id);
    }
    // A page short of the limit means nothing else matches up to `newest`: skip the
    // filtered-out ids so that the next wait does not return at once.
    if (static_cast<int>(events.size()) < filter_.limit) {
      filter_.since_id = std::max(filter_.since_id, newest);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  const bool wants_stats = !filter_.kind || *filter_.kind == events::EventKind::kGatewayStats;
  if (wants_stats && options_.stats_interval.count() > 0 &&
      (!last_stats_ || now - *last_stats_ >= options_.stats_interval)) {
    last_stats_ = now;
    if (options_.services) {
      const auto services = options_.services();
      if (services) text += FormatGatewayStats(*services, filter_.service);
    } else {
      text += FormatGatewayStats(daemon_.ListServices(), filter_.service);
    }
  }
  if (text.empty() && now - last_write_ >= options_.keepalive) text = ": keepalive\n\n";
  if (!text.empty()) last_write_ = now;
  return text;
}

}  // namespace gpuscale::api
