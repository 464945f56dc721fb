// Scrapes and PromQL queries for one control tick (metric_collector.h).
#include "scrape/metric_collector.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace gpuscale::metrics {

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
             CollectorOptions options, ReplicaScrapes& replica_scrapes, PromQueries& prom_queries) {
  QueryRound round;
  round.url = std::move(options.prometheus_url);
  round.timeout = options.query_timeout;
  round.cutoff = options.scrape.cutoff;
  round.stale_after_ticks = options.scrape.stale_after_ticks;
  // The queries beside the scrapes, not after them: both end by the same cutoff.
  prom_queries.Begin(queries, std::move(round));
  replica_scrapes.Collect(scrapes, std::move(options.scrape));
  prom_queries.End(queries);
}

}  // namespace gpuscale::metrics
