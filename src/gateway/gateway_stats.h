// GatewayStats: the gateway's measurements at the door, per service and replica: requests by
// status class, errors by reason, and histograms of queue time (activator), time to first
// byte of the body (TTFT for streams), time per output token (from the SSE event timings)
// and end-to-end duration. Exposed as gpuscale_gateway_* families (Prometheus naming: base
// units, counters end in _total), and summarized per service for the API.
//
// Ownership and thread-safety: a plain value; GatewayState's mutex guards it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "metrics/bucket_histogram.h"

namespace gpuscale::gateway {

// End-to-end buckets: vLLM's (every SLO threshold on a vLLM bound stays exact) below which
// finer ones resolve short requests (vLLM's first bound, 0.3 s, would put a 20 ms
// completion's p90 at 270 ms).
inline constexpr std::array<double, 26> kGatewayE2eBucketsSeconds = {
    0.01, 0.025, 0.05, 0.1,  0.2,  0.3,  0.5,  0.8,   1.0,   1.5,   2.0,    2.5,    5.0,
    10.0, 15.0,  20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// Added-latency buckets: what the gateway itself costs a request is micro- to milliseconds on
// a machine with a core to spare, and tens of milliseconds on a saturated one.
inline constexpr std::array<double, 16> kGatewayAddedBucketsSeconds = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
    0.005,   0.01,     0.025,   0.05,   0.1,     0.25,   0.5,   1.0};

// One client request as the gateway saw it.
struct RequestMeasurement {
  int status = 0;              // HTTP status sent to the client (0: none, the client left)
  std::string replica;         // empty when no replica served it
  std::string error;           // reason class when it failed: "queue_full", "queue_timeout",
                               // "upstream_connect", "upstream_broken", "client_gone", ...
  double queue_seconds = 0;    // waiting for a ready replica
  std::optional<double> ttft_seconds;  // arrival -> first response body byte
  std::optional<double> tpot_seconds;  // mean gap between SSE events after the first
  // The gateway's own part of the wait for the first body byte: arrival -> request written
  // to the replica, less the activator queue, plus the first body byte read -> written on to
  // the client. Not the replica's time. Unset when no body byte was relayed, and for
  // disaggregated services (their prefill step is replica time the gateway waits on).
  std::optional<double> added_seconds;
  double e2e_seconds = 0;      // arrival -> last byte sent
};

// A cumulative histogram as a scrape would show it: bounds ending in +Inf, cumulative counts
// (the last is the total), sum.
struct HistogramSample {
  std::vector<double> upper_bounds;
  std::vector<double> cumulative_counts;
  double sum = 0;
};

// A service's totals since start: what the daemon samples every tick (its metric view turns
// them into windowed rates, quantiles and SLO violation ratios, the `gateway` metric source).
struct ServiceStatsView {
  int64_t requests = 0;
  int64_t errors = 0;  // requests that ended with an error reason (5xx, broken, client gone)
  std::map<std::string, int64_t> requests_by_replica;
  HistogramSample queue, ttft, tpot, e2e, added;
  int in_flight = 0;  // now, over the service's replicas (GatewayState fills it)
  int queued = 0;     // now, in the activator queue (GatewayState fills it)
};

class GatewayStats {
 public:
  void Record(const std::string& service, const RequestMeasurement& m);
  void ConnectionOpened() { ++connections_; }
  void ConnectionClosed() { --connections_; }
  void UpstreamConnected() { ++upstream_connects_; }
  // The service's totals; all zero (with the histograms' bounds) when it saw no request yet,
  // so that a first sample is a true zero baseline for windowed rates.
  ServiceStatsView View(const std::string& service) const;
  // Families for /metrics; `in_flight` by (service, replica) and `queued` by service are the
  // live gauges GatewayState owns.
  std::string Text(
      const std::map<std::pair<std::string, std::string>, int>& in_flight,
      const std::map<std::string, int>& queued,
      const std::map<std::pair<std::string, std::string>, int>& queued_by_priority) const;

 private:
  struct Service {
    std::map<std::string, int64_t> requests_by_code;  // "2xx", "4xx", "5xx", "none"
    std::map<std::string, int64_t> errors_by_reason;
    std::map<std::string, int64_t> requests_by_replica;
    metrics::BucketHistogram queue{metrics::kVllmTtftBucketsSeconds};
    metrics::BucketHistogram ttft{metrics::kVllmTtftBucketsSeconds};
    metrics::BucketHistogram tpot{metrics::kVllmInterTokenBucketsSeconds};
    metrics::BucketHistogram e2e{kGatewayE2eBucketsSeconds};
    metrics::BucketHistogram added{kGatewayAddedBucketsSeconds};
  };
  std::map<std::string, Service> services_;
  int64_t connections_ = 0;
  int64_t upstream_connects_ = 0;
};

}  // namespace gpuscale::gateway
