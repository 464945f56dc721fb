// HTTP scraper: fetches a replica's Prometheus endpoint (`http://host:port/path`, e.g. vLLM's
// `http://127.0.0.1:8000/metrics`) and parses it with ParsePrometheusText. This is the
// adapter that does I/O; the parser and the windows stay pure. cpp-httplib stays out of this
// header (linked PRIVATE), so domain code that includes it cannot reach the HTTP library.
//
// Thread-safety: stateless; each call opens its own connection, so calls may run concurrently
// (the daemon scrapes replicas in parallel). Each call blocks for at most about
// `options.timeout` (see ScrapeOptions).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::metrics {

struct ScrapeOptions {
  // Deadline for the whole request: connect, send, and reading the body. Default 2 s, well
  // under a control tick, so one hung replica cannot stall the loop.
  Seconds timeout{2.0};
  // Bodies larger than this are refused (ResourceExhausted). Default 32 MiB; a vLLM
  // exposition is about 20 KB.
  size_t max_body_bytes = size_t{32} << 20;
  // Default: skip malformed lines, so that one broken line does not blind the autoscaler.
  ParseOptions parse{.skip_bad_lines = true};
};

struct ScrapeUrl {
  std::string host;
  int port = 80;
  std::string path = "/metrics";
};

// Splits `http://host[:port][/path]`; the path defaults to /metrics. Errors: InvalidArgument
// naming the URL when the scheme is not http, the host is empty or the port is not 1..65535.
Result<ScrapeUrl> ParseScrapeUrl(std::string_view url);

// GETs `url` and parses the body. Errors: InvalidArgument for a bad URL (or a malformed body
// when options.parse.skip_bad_lines is false); Unavailable when the endpoint cannot be
// reached, times out, or answers with a status other than 200 (the message names the URL and
// the cause); ResourceExhausted when the body exceeds options.max_body_bytes.
Result<Exposition> ScrapeMetrics(std::string_view url, const ScrapeOptions& options = {});

}  // namespace gpuscale::metrics
