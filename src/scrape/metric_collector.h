// MetricCollector: the daemon's metric I/O for one control tick -- every replica scrape and
// every PromQL query (metrics::QueryPrometheus) of all services. Neither holds the tick past
// its cutoff: scrapes run asynchronously on the calling thread over kept-alive connections,
// a straggler carried to the next tick (ReplicaScrapes, replica_scrapes.h); queries run
// meanwhile on PromQueries' worker pool, one still running at the cutoff left to answer a
// later tick while its last answer stands (prom_queries.h). Results are written into the
// job structs.
//
// Ownership: none (jobs, scrapes and queries are the caller's). Thread-safety: Collect
// blocks until the cutoff at most (until every scrape and query started this tick has
// ended, if sooner); one caller per ReplicaScrapes and PromQueries at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "scrape/prom_queries.h"
#include "scrape/replica_scrapes.h"

namespace gpuscale::metrics {

struct CollectorOptions {
  ScrapeRound scrape;          // timeout, families parsed, cutoff, staleness
  std::string prometheus_url;  // "" = no server: every query fails with a message saying so
  Seconds query_timeout{5};    // per PromQL query; default 5 s
};

// Runs every job. Scrapes as ReplicaScrapes::Collect (a kind and a result each), queries as
// PromQueries::Collect with the scrapes' cutoff and staleness (a result each).
void Collect(std::vector<ScrapeJob>& scrapes, std::vector<QueryJob>& queries,
             CollectorOptions options, ReplicaScrapes& replica_scrapes, PromQueries& prom_queries);

// Calls job(i) for i in [0, count) on at most max_threads threads (the caller's included).
void RunParallel(size_t count, size_t max_threads, const std::function<void(size_t)>& job);

}  // namespace gpuscale::metrics
