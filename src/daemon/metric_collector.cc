// Parallel scrapes and PromQL queries for one control tick (metric_collector.h).
#include "daemon/metric_collector.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "scrape/prometheus_query.h"

namespace gpuscale::daemon {

void RunParallel(size_t count, size_t max_threads, const std::function<void(size_t)>& job) {
  if (count == 0) return;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) job(i);
  };
  const size_t threads = std::clamp<size_t>(max_threads, 1, count);
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

void Collect(std::vector<ScrapeJob>& scrapes, std::vector<QueryJob>& queries,
             CollectorOptions options, ReplicaScrapes& replica_scrapes) {
  metrics::PrometheusQueryOptions query;
  query.timeout = options.query_timeout;
  auto run_queries = [&] {
    RunParallel(queries.size(), options.max_threads, [&](size_t i) {
      QueryJob& q = queries[i];
      if (options.prometheus_url.empty()) {
        q.result = FailedPrecondition(
            "the policy reads this metric from Prometheus, but the daemon config sets no "
            "prometheus.url",
            "prometheus.url");
        return;
      }
      q.result = metrics::QueryPrometheus(options.prometheus_url, q.promql, query);
    });
  };
  // The queries beside the scrapes, not after them: a tick waits for the slower of the two.
  std::thread querying;
  if (!queries.empty()) querying = std::thread(run_queries);
  replica_scrapes.Collect(scrapes, std::move(options.scrape));
  if (querying.joinable()) querying.join();
}

}  // namespace gpuscale::daemon
