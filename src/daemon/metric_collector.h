// MetricCollector: the daemon's metric I/O for one control tick -- every replica scrape and
// every PromQL query (metrics::QueryPrometheus) of all services, so one tick costs about one
// timeout however many replicas hang. Scrapes run asynchronously on the calling thread over
// the caller's kept-alive connections (metrics::ScrapePool); the few queries run meanwhile on
// a bounded number of short-lived threads. Results are written into the job structs.
//
// Ownership: none (jobs and pool are the caller's). Thread-safety: Collect blocks until every
// job has finished (each is bounded by its timeout); one caller per pool at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "metrics/prometheus_text_parser.h"
#include "scrape/scraper.h"

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
  size_t max_threads = 16;     // concurrent queries at most; default 16
  // Scrapes keep only these families (metrics::ParseOptions::only_families); null = all.
  const std::set<std::string, std::less<>>* scrape_families = nullptr;
};

// Runs every job. Errors land in each job's result: the scraper's/client's errors, or
// kFailedPrecondition "no prometheus.url configured" for queries without a server.
void Collect(std::vector<ScrapeJob>& scrapes, std::vector<QueryJob>& queries,
             const CollectorOptions& options, metrics::ScrapePool& pool);

// Calls job(i) for i in [0, count) on at most max_threads threads (the caller's included).
void RunParallel(size_t count, size_t max_threads, const std::function<void(size_t)>& job);

}  // namespace gpuscale::daemon
