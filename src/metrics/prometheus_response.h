// The Prometheus HTTP API's answer to an instant query (`GET /api/v1/query`), reduced to one
// number as KEDA's prometheus scaler does. Pure: a function of the body text, so the fuzzer
// and tests call it directly; the HTTP client that fetches the body is scrape/prometheus_query.h.
//
// Result reduction: a scalar -> its value; a vector with one sample -> its value; an empty
// vector -> kNotFound ("query returned no samples": the series does not exist yet, which
// callers treat as "no data", not as zero); a vector with several samples -> kInvalidArgument
// suggesting sum()/avg() (KEDA refuses multi-element results too); a matrix or string ->
// kInvalidArgument. NaN/Inf values are returned as they are (the caller decides).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuscale::metrics {

// Parses the JSON body of /api/v1/query.
// Errors: kInvalidArgument for malformed JSON or an unexpected shape (message says which
// field); kUnavailable for {"status":"error"} carrying the server's errorType/error; the
// reductions above.
Result<double> ParsePrometheusQueryResponse(std::string_view body);

// The server's message in an error body: "<errorType>: <error>" from the API's JSON, or the
// first 200 bytes of a body that is not JSON. For messages about non-200 answers.
std::string PrometheusServerError(std::string_view body);

}  // namespace gpuscale::metrics
