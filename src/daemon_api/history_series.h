// HistorySeries: a service's recorded ticks over a time range at one step, column by column,
// as DaemonApi::History returns it (GET /v1/services/NAME/history; daemon/service_history.h
// records and queries it). A plain value.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"

namespace gpuscale::daemon {

// The gateway figures a history keeps, in this order (HistorySeries::gateway's names).
inline constexpr std::array<const char*, 7> kHistoryGatewayFields = {
    "requests_per_second", "error_ratio",     "ttft_p50_seconds", "ttft_p90_seconds",
    "tpot_p50_seconds",    "e2e_p90_seconds", "in_flight"};

// A time range at one step, column by column (one entry per step; nullopt = nothing
// recorded in that step).
struct HistorySeries {
  using Column = std::vector<std::optional<double>>;
  struct Metric {
    std::string name;
    Column value, target;
  };
  Seconds from{0}, to{0}, step{0};
  std::vector<double> t;  // each step's start, seconds since the epoch
  Column desired, ready, current;
  std::vector<Metric> metrics;                               // in first-seen order
  std::array<Column, kHistoryGatewayFields.size()> gateway;  // by kHistoryGatewayFields
};

}  // namespace gpuscale::daemon
