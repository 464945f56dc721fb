// PromQueries: the policies' PromQL queries from one control tick to the next, so that a slow
// or hung Prometheus server never holds the tick (nor another service's). Each tick (Collect)
// starts every query that has none in flight, waits until every one started this tick has
// answered or the tick's cutoff passes (the scrapes' cutoff, ReplicaScrapes), and then hands
// over what arrived. A query still running at the cutoff is not abandoned: it goes on, and
// the first tick after it ends takes its answer as fresh. No (server, PromQL) pair ever has
// two in flight. Meanwhile the query's last answer (value or error) stands for up to
// `stale_after_ticks` ticks; after that its result is an error saying the answer is too old,
// which the policy sees as a metric error, as a failed query.
//
// Queries run on a persistent pool of at most `max_threads` worker threads, started as work
// needs them and kept until destruction (no thread per query); beyond that, queries queue.
// Bookkeeping is keyed by server URL and PromQL, so a reloaded prometheus.url is a new set of
// queries; queries no tick asks for any more are forgotten (one in flight when it ends, one
// queued without being run). A changed timeout applies to the queries started after it.
//
// Ownership: owns the worker threads and each query's bookkeeping. Destruction drops the
// queued queries and joins the workers: it waits for the queries running then, each bounded
// by its own timeout (prometheus.timeout_seconds). Thread-safety: Collect, in_flight() and
// ended() from one caller (the control loop); the workers share mu_ with it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "scrape/carried_request.h"
#include "scrape/prometheus_query.h"

namespace gpuscale::metrics {

struct QueryJob {
  std::string promql;
  Result<double> result = Unavailable("not queried");
};

struct QueryRound {
  std::string url;     // the Prometheus server; "" = none: every query fails saying so
  Seconds timeout{5};  // per query, the whole request; default 5 s
  // Collect hands over what arrived when this passes, queries still running or not.
  std::chrono::steady_clock::time_point cutoff = std::chrono::steady_clock::time_point::max();
  // A query with no answer for this many ticks is stale; default 3, at least 1.
  int stale_after_ticks = 3;
};

class PromQueries {
 public:
  // Runs one query; called on a worker thread, concurrently with other calls.
  using QueryFn = std::function<Result<double>(std::string_view url, std::string_view promql,
                                               const metrics::PrometheusQueryOptions&)>;

  // `max_threads`: queries running at once, at least 1 (the rest queue, oldest first).
  // `query`: metrics::QueryPrometheus unless a test injects a fake.
  explicit PromQueries(size_t max_threads = 16, QueryFn query = &metrics::QueryPrometheus);
  ~PromQueries();
  PromQueries(const PromQueries&) = delete;
  PromQueries& operator=(const PromQueries&) = delete;

  // One tick (see the header comment): Begin, then End. Sets each job's result. Without a
  // URL every job gets kFailedPrecondition naming prometheus.url; the client's errors
  // otherwise (metrics::QueryPrometheus), or kUnavailable while a query has no answer yet or
  // its last one is stale.
  void Collect(std::vector<QueryJob>& jobs, QueryRound round);
  // Collect in two halves, so that the caller can scrape in between: Begin starts the
  // tick's queries and returns at once; End waits for them until round.cutoff and sets each
  // job's result. REQUIRES: End gets the jobs of the last Begin, unchanged.
  void Begin(const std::vector<QueryJob>& jobs, QueryRound round);
  void End(std::vector<QueryJob>& jobs);

  // Queries running or queued when the last Collect returned.
  size_t in_flight() const;
  // Queries that ended (answered or failed) since construction.
  int64_t ended() const;

 private:
  struct Entry : CarriedRequest<Result<double>> {
    std::optional<Result<double>> last;  // the last handed-over answer
    int ticks_without = 0;               // ticks since an answer was handed over
  };
  struct Task {
    std::string key, url, promql;
    metrics::PrometheusQueryOptions options;
  };

  void Submit(const std::string& key, Entry& entry, const std::string& promql) GS_REQUIRES(mu_);
  void SpawnWorkers() GS_REQUIRES(mu_);
  void Work();
  void Landed(const std::string& key, Result<double> result) GS_REQUIRES(mu_);
  void Hand(Entry& entry, QueryJob& job) const GS_REQUIRES(mu_);

  const size_t max_threads_;
  const QueryFn query_;
  mutable Mutex mu_;
  CondVar work_cv_;    // a task was queued, or stopping_
  CondVar landed_cv_;  // a query ended
  std::unordered_map<std::string, Entry> entries_ GS_GUARDED_BY(mu_);  // by "<url> <promql>"
  std::deque<Task> queue_ GS_GUARDED_BY(mu_);
  bool stopping_ GS_GUARDED_BY(mu_) = false;
  size_t idle_ GS_GUARDED_BY(mu_) = 0;     // workers not running a query
  size_t running_ GS_GUARDED_BY(mu_) = 0;  // queries in flight (queued or running)
  uint64_t tick_ GS_GUARDED_BY(mu_) = 0;
  QueryRound round_ GS_GUARDED_BY(mu_);  // the tick's, from Begin
  // The tick's entries, one per job of Begin (null: no server to ask).
  std::vector<Entry*> tick_entries_ GS_GUARDED_BY(mu_);
  size_t waiting_ GS_GUARDED_BY(mu_) = 0;  // queries started this tick that have not ended
  int64_t ended_ GS_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> workers_;  // the caller's thread only (Collect, destructor)
};

}  // namespace gpuscale::metrics
