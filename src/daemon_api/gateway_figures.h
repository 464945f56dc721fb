// GatewayFigures: what the daemon's gateway measured for one service, as of one control tick
// (ServiceMetricView::Gateway computes it from the gateway's cumulative counters and
// histograms; GET /v1/services/NAME shows it as `gateway`). A plain value.
#pragma once

#include <cstdint>
#include <optional>

namespace gpuscale::daemon {

// The gateway's figures for one service at one tick (GET /v1/services/NAME's `gateway`).
struct GatewayFigures {
  int64_t requests_total = 0;
  int64_t errors_total = 0;
  int in_flight = 0;
  int queued = 0;
  std::optional<double> request_rate;                           // per second, last 30 s
  std::optional<double> error_ratio;                            // last minute
  std::optional<double> ttft_p50, ttft_p90, tpot_p50, e2e_p90;  // seconds, last minute
  // The gateway's own part of the wait for the first byte (gateway_stats.h), last minute.
  std::optional<double> added_p99;
  std::optional<double> ttft_violation_ratio, tpot_violation_ratio;  // vs the service's SLO

  // Something went through the gateway (the API and history show no figures before that).
  bool HasTraffic() const { return requests_total > 0 || in_flight > 0 || queued > 0; }

  friend bool operator==(const GatewayFigures&, const GatewayFigures&) = default;
};

}  // namespace gpuscale::daemon
