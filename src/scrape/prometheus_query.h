// Prometheus HTTP API client: runs an instant PromQL query (`GET /api/v1/query?query=...`)
// against a Prometheus server, as KEDA's prometheus scaler does, and reduces the result to
// one number with ParsePrometheusQueryResponse (metrics/prometheus_response.h, which says
// how). This is an adapter (does I/O); cpp-httplib stays out of the header.
//
// Thread-safety: stateless; each call opens its own connection.
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::metrics {

struct PrometheusQueryOptions {
  Seconds timeout{5};  // whole request
  std::string bearer_token;  // sent as Authorization: Bearer when non-empty
};

// `server_url`: "http://host[:port][/prefix]". Errors: kInvalidArgument for a bad URL;
// kUnavailable when the server cannot be reached, times out or answers 5xx (message names the
// URL); kInvalidArgument for a 400 (bad PromQL: the server's message is included);
// ParsePrometheusQueryResponse's errors.
Result<double> QueryPrometheus(std::string_view server_url, std::string_view promql,
                               const PrometheusQueryOptions& options = {});

}  // namespace gpuscale::metrics
