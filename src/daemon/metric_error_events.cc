#include "daemon/metric_error_events.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace gpuscale::daemon {

using events::EventKind;

std::string SummarizeErrors(const std::vector<std::string>& errors, size_t named) {
  const size_t shown = std::min(named, errors.size());
  std::string out = fmt::format(
      "{}", fmt::join(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(shown), "; "));
  if (errors.size() > shown) out += fmt::format("; and {} more", errors.size() - shown);
  return out;
}

std::optional<MetricErrorEvents::Event> MetricErrorEvents::Observe(
    const std::vector<std::string>& errors, Seconds now) {
  if (errors.empty()) {
    if (!in_spell_) return std::nullopt;
    if (!clean_since_) clean_since_ = now;
    if (now - *clean_since_ < kRecoveredAfter) return std::nullopt;
    in_spell_ = false;
    clean_since_.reset();
    const int changes = std::exchange(changes_, 0);
    last_written_.clear();
    last_seen_.clear();
    last_event_at_ = now;
    return Event{EventKind::kMetricsRecovered,
                 changes > 0 ? fmt::format("metrics read again ({} more change{} of the errors "
                                           "since the last event)",
                                           changes, changes == 1 ? "" : "s")
                             : "metrics read again"};
  }
  clean_since_.reset();
  const std::string text = SummarizeErrors(errors, kNamedErrors);
  const bool changed = text != last_seen_;
  last_seen_ = text;
  if (!in_spell_) {
    in_spell_ = true;
    changes_ = 0;
    last_written_ = text;
    last_event_at_ = now;
    return Event{EventKind::kMetricsError, text};
  }
  if (changed) ++changes_;
  if (text == last_written_ || now - last_event_at_ < kUpdateEvery) return std::nullopt;
  const int changes = std::exchange(changes_, 0) - 1;  // not counting this one
  last_written_ = text;
  last_event_at_ = now;
  return Event{EventKind::kMetricsError,
               changes > 0 ? fmt::format("{} ({} more change{} since the last event)", text,
                                         changes, changes == 1 ? "" : "s")
                           : text};
}

}  // namespace gpuscale::daemon
