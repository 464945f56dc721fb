// ReplicaScrapes: the daemon's replica scrapes from one control tick to the next, so that a
// tick never waits for a straggler. Each tick (Collect) starts a scrape of every replica that
// has none in flight, works on the scrapes until every one started this tick has ended or the
// tick's cutoff passes, and then hands over what arrived. A scrape still in flight at the
// cutoff is not abandoned: it goes on in the next tick's Collect, until it answers or its own
// timeout ends it, and no replica ever has two in flight. Meanwhile the replica's previous
// values stand for up to `stale_after_ticks` ticks; after that it is reported stale (an error
// naming the replica, as a failed scrape is), not silently reused for ever.
//
// Scrapes run on the calling thread only inside Collect (metrics::ScrapePool::Run): nothing
// progresses between ticks, but each scrape keeps its own deadline, so one left over ends at
// the latest in the first Collect after its timeout.
//
// A job may be not `due`: the daemon scrapes replicas no policy reads less often. Then no
// scrape starts (unless none has ever answered) and the last outcome stands without aging.
//
// Ownership: owns the pool (kept-alive connections) and each replica's bookkeeping, keyed by
// replica id and URL (a replica restarted on another port is a new one). Thread-safety: one
// caller (the control loop); in_flight() and connections_opened() from the same thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "metrics/prometheus_text_parser.h"
#include "scrape/carried_request.h"
#include "scrape/sample_kind.h"
#include "scrape/scraper.h"

namespace gpuscale::metrics {

struct ScrapeJob {
  std::string replica;  // its id ("svc-3"), for the staleness error and the bookkeeping
  std::string url;      // http://127.0.0.1:<port><metrics_path>
  // false: no new scrape this tick unless the replica has never answered; its last outcome
  // stands (kKept, or kCarried for a failure) and, with no scrape in flight, does not age
  // towards staleness. For replicas whose scrapes only the API's view reads (the daemon's
  // `scrape.view_only_interval_seconds`).
  bool due = true;
  SampleKind kind = SampleKind::kNew;  // what `result` is (sample_kind.h)
  Result<metrics::Exposition> result = Unavailable("not scraped");
};

struct ScrapeRound {
  Seconds timeout{2};  // per scrape, the whole exchange; default 2 s
  // Only these families are parsed (metrics::ParseOptions::only_families); nullopt = all.
  std::optional<std::set<std::string, std::less<>>> families;
  // Collect hands over what arrived when this passes, scrapes still in flight or not.
  std::chrono::steady_clock::time_point cutoff = std::chrono::steady_clock::time_point::max();
  // A replica with no scrape ended for this many ticks is stale; default 3, at least 1.
  int stale_after_ticks = 3;
};

class ReplicaScrapes {
 public:
  // `max_in_flight`: scrapes in progress at once (the rest queue, oldest first).
  explicit ReplicaScrapes(size_t max_in_flight = 256);
  ReplicaScrapes(const ReplicaScrapes&) = delete;
  ReplicaScrapes& operator=(const ReplicaScrapes&) = delete;

  // One tick (see the header comment): sets each job's kind and result. Replicas no job
  // names any more are forgotten (a scrape of one still in flight ends unreported).
  void Collect(std::vector<ScrapeJob>& jobs, ScrapeRound round);

  // Scrapes left in flight by the last Collect.
  size_t in_flight() const { return pool_.pending(); }
  // Scrapes that ended (answered, failed or timed out) since construction.
  int64_t ended() const { return ended_; }
  int64_t connections_opened() const { return pool_.connections_opened(); }

 private:
  struct Entry : CarriedRequest<Result<metrics::Exposition>> {
    std::optional<Error> failure;  // the last handed-over outcome, while it is an error
    int ticks_without = 0;         // ticks with a scrape in flight since an outcome was handed over
    bool answered = false;         // some outcome was handed over
  };

  void Start(const std::string& key, Entry& entry, const std::string& url);
  void Landed(const std::string& key, Result<metrics::Exposition> result);
  static void Hand(Entry& entry, ScrapeJob& job, int stale_after_ticks);

  metrics::ScrapePool pool_;
  metrics::ScrapeOptions options_;  // this tick's; parse.only_families -> families_
  std::set<std::string, std::less<>> families_;
  std::unordered_map<std::string, Entry> entries_;  // by "<replica> <url>"
  uint64_t tick_ = 0;
  size_t waiting_ = 0;  // scrapes submitted this tick that have not ended
  int64_t ended_ = 0;
};

}  // namespace gpuscale::metrics
