// Replica scrapes across control ticks (replica_scrapes.h).
#include "scrape/replica_scrapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace gpuscale::metrics {

ReplicaScrapes::ReplicaScrapes(size_t max_in_flight) : pool_(max_in_flight) {}

void ReplicaScrapes::Collect(std::vector<ScrapeJob>& jobs, ScrapeRound round) {
  ++tick_;
  waiting_ = 0;
  options_.timeout = round.timeout;
  // Scrapes still in flight parse with the set as it is when they answer: this tick's.
  if (round.families) families_ = std::move(*round.families);
  options_.parse.only_families = round.families ? &families_ : nullptr;
  for (auto& [key, entry] : entries_) entry.wanted = false;
  std::vector<Entry*> entries;
  entries.reserve(jobs.size());
  for (const ScrapeJob& job : jobs) {
    std::string key = fmt::format("{} {}", job.replica, job.url);
    Entry& entry = entries_[key];  // node-based: the reference outlives later insertions
    entry.wanted = true;
    if (!entry.in_flight && !entry.landed && (job.due || !entry.answered)) {
      Start(key, entry, job.url);
    }
    entries.push_back(&entry);
  }
  pool_.Run(round.cutoff, [this] { return waiting_ == 0; });
  const int stale_after = std::max(round.stale_after_ticks, 1);
  for (size_t i = 0; i < jobs.size(); ++i) Hand(*entries[i], jobs[i], stale_after);
  // A forgotten replica's scrape in flight is dropped when it ends (Landed).
  ForgetUnwanted(entries_);
}

void ReplicaScrapes::Start(const std::string& key, Entry& entry, const std::string& url) {
  entry.in_flight = true;
  entry.tick = tick_;
  ++waiting_;
  // Answered at once for a bad URL: Landed then runs inside this call.
  pool_.Submit(url, options_,
               [this, key](Result<metrics::Exposition> result) { Landed(key, std::move(result)); });
}

void ReplicaScrapes::Landed(const std::string& key, Result<metrics::Exposition> result) {
  ++ended_;
  LandCarried(entries_, key, std::move(result), tick_, waiting_);
}

void ReplicaScrapes::Hand(Entry& entry, ScrapeJob& job, int stale_after_ticks) {
  if (entry.landed) {
    job.kind = SampleKind::kNew;
    job.result = std::move(*entry.landed);
    entry.landed.reset();
    entry.ticks_without = 0;
    entry.answered = true;
    if (job.result) {
      entry.failure.reset();
    } else {
      entry.failure = job.result.error();
    }
    return;
  }
  // Not due and not scraped: the last outcome is as old as the caller chose; it does not age.
  if (entry.in_flight) ++entry.ticks_without;
  if (entry.failure) {
    // Repeated until a scrape succeeds: the replica's error does not flicker (and its
    // metrics_error event is not sent again) while the next scrape is in flight.
    job.kind = SampleKind::kCarried;
    job.result = Unexpected<Error>(*entry.failure);
  } else if (entry.ticks_without >= stale_after_ticks) {
    // The same text every tick it stays stale, so that it is one event, not one a tick.
    job.kind = SampleKind::kCarried;
    job.result = Unavailable(fmt::format(
        "replica {}: metrics stale: its scrape of {} has not answered for {} ticks (still in "
        "flight); its last values are no longer used",
        job.replica, job.url, stale_after_ticks));
  } else {
    job.kind = SampleKind::kKept;
  }
}

}  // namespace gpuscale::metrics
