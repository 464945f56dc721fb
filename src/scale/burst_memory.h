// BurstMemory: what the `slo` policy remembers of the load's short bursts, so that a fleet is
// not shrunk just before a burst that has come back before, and is grown ahead of one that
// recurs on a period.
//
// The input is the policy's short (30 s) arrival rate once per tick. The level is the median
// of that rate over the last level_window (10 min): a one-minute burst moves a median of
// 10 minutes little, a level shift (a flash crowd that stays, a diurnal rise) moves it within
// half the window. A burst is an episode in which the short rate stands above
// burst_ratio x level and above the level by more than noise_z standard deviations (the
// larger of the caller's Poisson `noise` and the rate's own spread over the window), once
// the level has half a window of history; it ends when the
// rate falls back halfway from its peak to the level it rose from (a single tick above
// the level is a blip and forgotten).
// An episode still going after max_burst is a level shift, not a burst, and is forgotten:
// the level follows it, and remembering its peak would hold a fleet for a load that is now
// the normal one.
//
// What is expected of the load (Expect):
//  - no burst remembered: nothing;
//  - one burst (a one-off so far): its peak, for one_off_hold after it ended (it may be the
//    first of a series), then nothing: a one-off is not bought again;
//  - bursts at a steady period (the last two intervals between onsets agree within
//    period_tolerance): the peak, from `lead` before the next expected onset until
//    the longest burst's duration plus slack after it; between bursts nothing. A predicted
//    burst that does not come by then breaks the period (it must be seen again);
//  - two or more bursts at no steady period: the peak, for as long as the longest gap seen
//    between them lasts since the last one (irregular bursts may come back at any time).
// A burst's peak is kept as its ratio to the level before it (the level, or the last
// minute's mean rate where that is higher, as under a rise the median lags), and expected as
// that ratio of today's level: under a diurnal rise the next burst is as much larger as the
// load is.
//
// Pure: time is a parameter. Not thread-safe (owned by one policy).
#pragma once

#include <deque>
#include <optional>
#include <string>

#include "core/clock.h"

namespace gpuscale::scale {

struct BurstMemoryConfig {
  Seconds memory{3600};       // bursts older than this are forgotten
  Seconds level_window{600};  // the level is the median short rate over this
  double burst_ratio = 1.3;   // a burst stands this far above the level...
  double noise_z = 3;         // ...and this many Poisson standard deviations above it
  Seconds max_burst{300};     // longer episodes are level shifts
  Seconds one_off_hold{600};  // a single burst is expected again for this long
  double period_tolerance = 0.2;
  Seconds lead{90};   // ready this long before an expected onset (cold start + a tick)
  Seconds slack{60};  // and held this long after its expected end
  Seconds rejoin{45};  // a burst resuming within this of its end is the same burst
};

class BurstMemory {
 public:
  explicit BurstMemory(BurstMemoryConfig config = {}) : config_(config) {}

  // One tick's short-window rate and its Poisson noise (one standard deviation, same unit).
  void Observe(Seconds now, double short_rate, double noise);

  struct Expectation {
    double rate = 0;     // the load to be ready for: level x the bursts' peak ratio
    std::string reason;  // e.g. "a burst every 600 s expected at 3600 s (x2.5)"
  };
  // What to be ready for at `now` (see the header comment); nullopt: nothing beyond the level.
  std::optional<Expectation> Expect(Seconds now) const;

  // True between the expected windows of bursts that recur on a period: the load is back at
  // its level, and a fleet held for the last burst can go (the next one is expected in time).
  bool BetweenPeriodicBursts(Seconds now) const;
  // True while a burst is under way.
  bool InBurst() const { return !bursts_.empty() && bursts_.back().open; }

  double level() const { return level_; }
  int bursts() const { return static_cast<int>(bursts_.size()); }

 private:
  struct Burst {
    Seconds onset{0};
    Seconds end{0};                  // last tick in the burst (== onset while it lasts one tick)
    double highest = 0, second = 0;  // the two highest readings of rate / onset_level
    double onset_level = 0;
    int ticks = 1;  // observed above the level
    bool open = true;

    void Read(double reading);  // one tick's rate / onset_level
    // Peak short rate / onset_level: the second-highest reading once there are two. The
    // arrival estimate jumps for a tick as replicas turn ready in a queue's drain (their
    // completions land in the 30 s window at once), and one such reading, a third above the
    // load, set the fleet for the whole burst and for every expected recurrence.
    double Ratio() const { return second > 0 ? second : highest; }
  };
  // What a burst starting at `now` rose from: the level, or the mean rate of the minute
  // before `now` where that stands higher. REQUIRES: level_ updated for this tick.
  double OnsetLevel(Seconds now) const;
  std::optional<Seconds> Period() const;
  // Within the expected window of the next burst of a period, or just after the last one.
  // REQUIRES: bursts_ not empty.
  bool InPeriodicWindow(Seconds now, Seconds period) const;
  double PeakRatio() const;
  Seconds LongestBurst() const;

  BurstMemoryConfig config_;
  std::deque<std::pair<Seconds, double>> rates_;  // (time, short rate) over level_window
  double level_ = 0;
  std::deque<Burst> bursts_;  // by onset; only the last may be open
};

}  // namespace gpuscale::scale
