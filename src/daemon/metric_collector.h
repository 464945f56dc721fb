// MetricCollector: the daemon's metric I/O for one control tick -- every replica scrape and
// every PromQL query (metrics::QueryPrometheus) of all services. Scrapes run asynchronously on
// the calling thread over kept-alive connections and end by the tick's cutoff, a straggler
// carried to the next tick (ReplicaScrapes, replica_scrapes.h); the few queries run meanwhile
// on a bounded number of short-lived threads. Results are written into the job structs.
//
// Ownership: none (jobs and scrapes are the caller's). Thread-safety: Collect blocks until
// the scrapes' cutoff and every query has ended (each query is bounded by its timeout); one
// caller per ReplicaScrapes at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "daemon/replica_scrapes.h"

namespace gpuscale::daemon {

struct QueryJob {
  std::string promql;
  Result<double> result = Unavailable("not queried");
};

struct CollectorOptions {
  ScrapeRound scrape;          // timeout, families parsed, cutoff, staleness
  std::string prometheus_url;  // "" = no server: every query fails with a message saying so
  Seconds query_timeout{5};    // per PromQL query; default 5 s
  size_t max_threads = 16;     // concurrent queries at most; default 16
};

// Runs every job. Scrapes as ReplicaScrapes::Collect (a kind and a result each); queries'
// errors land in their result: the client's, or kFailedPrecondition "no prometheus.url
// configured" without a server.
void Collect(std::vector<ScrapeJob>& scrapes, std::vector<QueryJob>& queries,
             CollectorOptions options, ReplicaScrapes& replica_scrapes);

// Calls job(i) for i in [0, count) on at most max_threads threads (the caller's included).
void RunParallel(size_t count, size_t max_threads, const std::function<void(size_t)>& job);

}  // namespace gpuscale::daemon
