// Prometheus HTTP API client: runs an instant PromQL query (`GET /api/v1/query?query=...`)
// against a Prometheus server, as KEDA's prometheus scaler does, and reduces the result to
// one number. This is an adapter (does I/O); cpp-httplib stays out of the header.
//
// Result reduction: a scalar -> its value; a vector with one sample -> its value; an empty
// vector -> kNotFound ("query returned no samples": the series does not exist yet, which
// callers treat as "no data", not as zero); a vector with several samples -> kInvalidArgument
// suggesting sum()/avg() (KEDA refuses multi-element results too); a matrix or string ->
// kInvalidArgument. NaN/Inf values are returned as they are (the caller decides).
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

// Parses the JSON body of /api/v1/query (pure; exposed for tests and the fuzzer).
// Errors: kInvalidArgument for malformed JSON or an unexpected shape (message says which
// field); kUnavailable for {"status":"error"} carrying the server's errorType/error; the
// reductions above.
Result<double> ParsePrometheusQueryResponse(std::string_view body);

// `server_url`: "http://host[:port][/prefix]". Errors: kInvalidArgument for a bad URL;
// kUnavailable when the server cannot be reached, times out or answers 5xx (message names the
// URL); kInvalidArgument for a 400 (bad PromQL: the server's message is included);
// ParsePrometheusQueryResponse's errors.
Result<double> QueryPrometheus(std::string_view server_url, std::string_view promql,
                               const PrometheusQueryOptions& options = {});

}  // namespace gpuscale::metrics
