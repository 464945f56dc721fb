// MetricCollector: the daemon's metric I/O for one control tick -- every replica scrape
// (metrics::ScrapeMetrics) and every PromQL query (metrics::QueryPrometheus) of all services,
// run in parallel on a bounded number of short-lived threads, so one tick costs about one
// timeout however many replicas hang. Results are written into the job structs.
//
// Ownership: none (jobs are the caller's). Thread-safety: Collect may be called from any
// thread; it blocks until every job has finished (each is bounded by its timeout).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::daemon {

struct ScrapeJob {
  std::string url;  // http://127.0.0.1:<port><metrics_path>
  Result<metrics::Exposition> result = Unavailable("not scraped");
};

struct QueryJob {
  std::string promql;
  Result<double> result = Unavailable("not queried");
};

struct CollectorOptions {
  Seconds scrape_timeout{2};   // per scrape (connect + read); default 2 s
  std::string prometheus_url;  // "" = no server: every query fails with a message saying so
  Seconds query_timeout{5};    // per PromQL query; default 5 s
  size_t max_threads = 16;     // concurrent requests at most; default 16
};

// Runs every job. Errors land in each job's result: the scraper's/client's errors, or
// kFailedPrecondition "no prometheus.url configured" for queries without a server.
void Collect(std::vector<ScrapeJob>& scrapes, std::vector<QueryJob>& queries,
             const CollectorOptions& options);

// Calls job(i) for i in [0, count) on at most max_threads threads (the caller's included).
void RunParallel(size_t count, size_t max_threads, const std::function<void(size_t)>& job);

}  // namespace gpuscale::daemon
