// PromQL queries across control ticks (prom_queries.h).
#include "scrape/prom_queries.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace gpuscale::metrics {

PromQueries::PromQueries(size_t max_threads, QueryFn query)
    : max_threads_(std::max<size_t>(max_threads, 1)), query_(std::move(query)) {}

PromQueries::~PromQueries() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    queue_.clear();  // not started: nobody waits for their answers any more
  }
  work_cv_.NotifyAll();
  // Each worker ends after the query it is running, which its timeout bounds.
  for (std::thread& worker : workers_) worker.join();
}

void PromQueries::Collect(std::vector<QueryJob>& jobs, QueryRound round) {
  Begin(jobs, std::move(round));
  End(jobs);
}

void PromQueries::Begin(const std::vector<QueryJob>& jobs, QueryRound round) {
  MutexLock lock(mu_);
  ++tick_;
  waiting_ = 0;
  round_ = std::move(round);
  round_.stale_after_ticks = std::max(round_.stale_after_ticks, 1);
  for (auto& [key, entry] : entries_) entry.wanted = false;
  tick_entries_.assign(jobs.size(), nullptr);
  for (size_t i = 0; i < jobs.size() && !round_.url.empty(); ++i) {
    std::string key = fmt::format("{} {}", round_.url, jobs[i].promql);
    Entry& entry = entries_[key];  // node-based: the reference outlives later insertions
    entry.wanted = true;
    if (!entry.in_flight && !entry.landed) Submit(key, entry, jobs[i].promql);
    tick_entries_[i] = &entry;
  }
  SpawnWorkers();
}

void PromQueries::End(std::vector<QueryJob>& jobs) {
  MutexLock lock(mu_);
  const auto settled = [this]() GS_REQUIRES(mu_) { return waiting_ == 0; };
  // No deadline at all when there is no cutoff (time_point::max() would overflow the wait).
  if (round_.cutoff == std::chrono::steady_clock::time_point::max()) {
    landed_cv_.Wait(mu_, settled);
  } else {
    landed_cv_.WaitUntil(mu_, round_.cutoff, settled);
  }
  // Two services asking the same server the same PromQL share one query and its answer.
  std::unordered_map<const Entry*, size_t> first;
  for (size_t i = 0; i < jobs.size() && i < tick_entries_.size(); ++i) {
    Entry* entry = tick_entries_[i];
    if (entry == nullptr) {
      jobs[i].result = FailedPrecondition(
          "the policy reads this metric from Prometheus, but the daemon config sets no "
          "prometheus.url",
          "prometheus.url");
    } else if (auto [it, added] = first.try_emplace(entry, i); !added) {
      jobs[i].result = jobs[it->second].result;
    } else {
      Hand(*entry, jobs[i]);
    }
  }
  tick_entries_.clear();
  // A forgotten query in flight is dropped when it ends or leaves the queue (Landed, Work).
  ForgetUnwanted(entries_);
}

size_t PromQueries::in_flight() const {
  MutexLock lock(mu_);
  return running_;
}

int64_t PromQueries::ended() const {
  MutexLock lock(mu_);
  return ended_;
}

void PromQueries::Submit(const std::string& key, Entry& entry, const std::string& promql) {
  entry.in_flight = true;
  entry.tick = tick_;
  ++waiting_;
  ++running_;
  Task task{key, round_.url, promql, {}};
  task.options.timeout = round_.timeout;
  queue_.push_back(std::move(task));
  work_cv_.NotifyOne();
}

// A worker per queued query while fewer than max_threads_ run: idle ones are reused, so that
// the pool grows to what the slowest ticks need and no further.
void PromQueries::SpawnWorkers() {
  while (queue_.size() > idle_ && workers_.size() < max_threads_) {
    ++idle_;  // counted from now, so that the next loop turn does not start another
    workers_.emplace_back([this] { Work(); });
  }
}

void PromQueries::Work() {
  for (;;) {
    Task task;
    {
      MutexLock lock(mu_);
      work_cv_.Wait(mu_, [this]() GS_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      auto it = entries_.find(task.key);
      if (it == entries_.end() || !it->second.wanted) {
        // No tick asks for it since it was queued: not worth a request.
        --running_;
        if (it != entries_.end()) entries_.erase(it);
        continue;
      }
      --idle_;
    }
    Result<double> result = query_(task.url, task.promql, task.options);
    MutexLock lock(mu_);
    ++idle_;
    Landed(task.key, std::move(result));
  }
}

void PromQueries::Landed(const std::string& key, Result<double> result) {
  ++ended_;
  --running_;
  landed_cv_.NotifyAll();
  LandCarried(entries_, key, std::move(result), tick_, waiting_);
}

void PromQueries::Hand(Entry& entry, QueryJob& job) const {
  if (entry.landed) {
    job.result = std::move(*entry.landed);
    entry.landed.reset();
    entry.last = job.result;
    entry.ticks_without = 0;
    return;
  }
  ++entry.ticks_without;
  if (entry.last && !*entry.last) {
    // Repeated until a query succeeds: the error does not flicker (nor its metrics_error
    // event repeat) while the next query runs.
    job.result = *entry.last;
  } else if (entry.ticks_without >= round_.stale_after_ticks) {
    // The same text every tick it stays stale, so that it is one event, not one a tick.
    job.result = Unavailable(fmt::format(
        "the Prometheus query has not answered within {} ticks (server at {} slow or "
        "unreachable?): {}",
        round_.stale_after_ticks, round_.url,
        entry.last ? "its last answer is too old to scale on" : "there is no answer to scale on"));
  } else if (entry.last) {
    job.result = *entry.last;  // young enough: the previous value stands
  } else {
    job.result = Unavailable(fmt::format(
        "the Prometheus query has not answered yet (server at {} slow or unreachable?): it is "
        "still running after the tick's cutoff",
        round_.url));
  }
}

}  // namespace gpuscale::metrics
