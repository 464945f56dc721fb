// HTTP scraper: fetches a replica's Prometheus endpoint (`http://host:port/path`, e.g. vLLM's
// `http://127.0.0.1:8000/metrics`) and parses it with ParsePrometheusText. This is the
// adapter that does I/O; the parser and the windows stay pure. cpp-httplib stays out of this
// header (linked PRIVATE), so domain code that includes it cannot reach the HTTP library.
//
// ScrapeMetrics is stateless: each call opens its own connection, so calls may run
// concurrently, and blocks for at most about `options.timeout` (see ScrapeOptions).
// ScrapePool scrapes many URLs at once on the calling thread over kept-alive connections (what
// the daemon does every tick), as a batch (ScrapeAll) or as scrapes that may outlast one call
// (Submit and Run, net::HttpGetPool's); one caller at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::net {
class HttpGetPool;
}

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

// Many scrapes at once, with ScrapeMetrics' contract for each: asynchronous on one thread
// (at most max_in_flight in progress), over connections kept alive from one call to the next
// (net/http_get_pool.h), so a fleet's replicas cost neither a thread nor a connect each per
// tick.
class ScrapePool {
 public:
  explicit ScrapePool(size_t max_in_flight = 256);
  ~ScrapePool();
  ScrapePool(const ScrapePool&) = delete;
  ScrapePool& operator=(const ScrapePool&) = delete;

  // One result per URL, in order. Blocks until every scrape ended (each within its timeout).
  std::vector<Result<Exposition>> ScrapeAll(const std::vector<std::string>& urls,
                                            const ScrapeOptions& options = {});

  // Starts a scrape of `url` in the next Run; `done` gets ScrapeMetrics' outcome for it, in
  // that Run or a later one (on the thread in Run; the body is parsed there). A bad URL is
  // answered at once, in this call. `options` is copied; a set its parse.only_families points
  // to must outlive the scrape and may be changed between Runs (the scrape parses with the
  // set as it is when its answer comes).
  void Submit(std::string url, const ScrapeOptions& options,
              std::function<void(Result<Exposition>)> done);
  // Works on the submitted scrapes: on every answer that came since the last Run, then until
  // `finished()` holds, none is left or `deadline` passes (net::HttpGetPool::Run).
  void Run(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& finished);
  // Submitted scrapes not ended yet.
  size_t pending() const;

  // Connections opened so far (a steady fleet opens about one per replica, once).
  int64_t connections_opened() const;

 private:
  std::unique_ptr<net::HttpGetPool> pool_;
};

}  // namespace gpuscale::metrics
