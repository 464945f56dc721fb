#include "scale/burst_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpuscale::scale {
namespace {

// The stretch before a burst's first tick whose mean rate may stand for the level it rose from.
constexpr Seconds kOnsetWindow{60};

// Reorders values.
double Median(std::vector<double>& values) {
  auto mid = values.begin() + values.size() / 2;
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

}  // namespace

void BurstMemory::Burst::Read(double reading) {
  if (reading > highest) {
    second = highest;
    highest = reading;
  } else {
    second = std::max(second, reading);
  }
}

double BurstMemory::OnsetLevel(Seconds now) const {
  // Under a rising load (a diurnal ramp) the ten-minute median lags the rate a burst takes
  // off from, and a peak measured against it read as a larger burst than it was; the memory
  // then bought that ratio of each later, higher level.
  double sum = 0;
  int n = 0;
  for (auto it = rates_.rbegin(); it != rates_.rend() && now - it->first <= kOnsetWindow; ++it) {
    if (it->first == now) continue;  // this tick's own rate is the burst's, not its onset's
    sum += it->second;
    ++n;
  }
  return n > 0 ? std::max(level_, sum / n) : level_;
}

void BurstMemory::Observe(Seconds now, double short_rate, double noise) {
  // The level and spread before this tick: a burst's own first tick must not raise the bar
  // it clears. The spread (1.4826 x the median absolute deviation: one standard deviation
  // for normal noise) covers what Poisson noise does not, e.g. a rate counted in tokens
  // swinging with the lengths of the requests that happened to finish.
  double spread = 0;
  if (!rates_.empty()) {
    std::vector<double> values;
    values.reserve(rates_.size());
    for (const auto& sample : rates_) values.push_back(sample.second);
    level_ = Median(values);
    for (double& v : values) v = std::abs(v - level_);
    spread = 1.4826 * Median(values);
  } else {
    level_ = short_rate;
  }
  rates_.emplace_back(now, short_rate);
  while (now - rates_.front().first > config_.level_window) rates_.pop_front();
  while (!bursts_.empty() && !bursts_.front().open && now - bursts_.front().end > config_.memory) {
    bursts_.pop_front();
  }

  // A level from less than half its window (the first minutes) is no reference yet.
  const bool settled = now - rates_.front().first >= config_.level_window / 2;
  const bool above = settled && level_ > 0 && short_rate > config_.burst_ratio * level_ &&
                     short_rate - level_ > config_.noise_z * std::max(noise, spread);
  if (!bursts_.empty() && bursts_.back().open) {
    Burst& b = bursts_.back();
    // Ended once the rate is back halfway from its peak to the level it rose from: under a
    // rising level (a diurnal ramp) the rate after a burst may stay above the level before it.
    const double peak = b.onset_level * b.Ratio();
    if (short_rate < (b.onset_level + peak) / 2) {
      b.open = false;
      // One tick above is a blip (e.g. completions catching up as replicas turn ready), not
      // a burst: arrivals that come in a burst stay in the 30 s window for two ticks.
      if (b.ticks < 2) bursts_.pop_back();
    } else if (now - b.onset > config_.max_burst) {
      bursts_.pop_back();  // a level shift: the level follows it
    } else {
      b.end = now;
      ++b.ticks;
      b.Read(short_rate / b.onset_level);
    }
  } else if (above) {
    if (!bursts_.empty() && now - bursts_.back().end <= config_.rejoin) {
      bursts_.back().open = true;  // a dip inside one burst (the 30 s window's noise)
      bursts_.back().end = now;
      ++bursts_.back().ticks;
    } else {
      Burst b;
      b.onset = b.end = now;
      b.onset_level = OnsetLevel(now);
      b.Read(short_rate / b.onset_level);
      bursts_.push_back(b);
    }
  }

  // A period that missed its burst is over: forget the series, so it is not bought again.
  if (auto period = Period(); period && !bursts_.back().open) {
    const Seconds next = bursts_.back().onset + *period;
    if (now > next + config_.period_tolerance * *period + LongestBurst() + config_.slack) {
      bursts_.clear();
    }
  }
}

std::optional<Seconds> BurstMemory::Period() const {
  // A burst of one tick so far may be a blip: it neither makes nor breaks a period.
  const bool blip = !bursts_.empty() && bursts_.back().open && bursts_.back().ticks < 2;
  const size_t n = bursts_.size() - (blip ? 1 : 0);
  if (n < 3) return std::nullopt;
  const Seconds last = bursts_[n - 1].onset - bursts_[n - 2].onset;
  const Seconds before = bursts_[n - 2].onset - bursts_[n - 3].onset;
  if (std::abs((last - before).count()) > config_.period_tolerance * last.count()) {
    return std::nullopt;
  }
  return (last + before) / 2;
}

bool BurstMemory::InPeriodicWindow(Seconds now, Seconds period) const {
  const Burst& last = bursts_.back();
  const Seconds next = last.onset + period;
  const bool after_last = now - last.end <= config_.slack;
  // Late by as much as the last two gaps differed (at least two ticks of the 30 s window).
  const size_t n = bursts_.size();
  const Seconds jitter = std::max(
      Seconds{30}, Seconds{std::abs(((bursts_[n - 1].onset - bursts_[n - 2].onset) -
                                     (bursts_[n - 2].onset - bursts_[n - 3].onset))
                                        .count())});
  const bool before_next =
      now >= next - config_.lead && now <= next + jitter + LongestBurst() + config_.slack;
  return after_last || before_next;
}

bool BurstMemory::BetweenPeriodicBursts(Seconds now) const {
  if (bursts_.empty() || bursts_.back().open) return false;
  auto period = Period();
  return period && !InPeriodicWindow(now, *period);
}

double BurstMemory::PeakRatio() const {
  // The median burst, not the largest: a burst's peak is read from a 30 s rate that overshoots
  // while a queue builds (arrivals are completions plus the queue's growth), and one high
  // reading would otherwise set the fleet for every burst of the hour.
  std::vector<double> ratios;
  for (const Burst& b : bursts_) {
    if (!b.open) ratios.push_back(b.Ratio());
  }
  if (ratios.empty()) return bursts_.empty() ? 1 : bursts_.back().Ratio();
  return std::max(1.0, Median(ratios));
}

Seconds BurstMemory::LongestBurst() const {
  Seconds longest{0};
  for (const Burst& b : bursts_) longest = std::max(longest, b.end - b.onset);
  return longest;
}

std::optional<BurstMemory::Expectation> BurstMemory::Expect(Seconds now) const {
  if (bursts_.empty()) return std::nullopt;
  const Burst& last = bursts_.back();
  const double ratio = PeakRatio();
  auto expect = [&](std::string why) {
    return Expectation{level_ * ratio, fmt::format("{} (x{:.2f} the level)", why, ratio)};
  };
  if (last.open) {  // its peak so far, while it lasts (the level is rising under it)
    return Expectation{last.onset_level * last.Ratio(),
                       fmt::format("in a burst (x{:.2f} the level before it)", last.Ratio())};
  }
  const double since_end = (now - last.end).count();
  if (bursts_.size() == 1) {
    if (now - last.end > config_.one_off_hold) return std::nullopt;
    return expect(fmt::format("a burst ended {:.0f} s ago", since_end));
  }
  if (auto period = Period()) {
    const Seconds next = last.onset + *period;
    if (!InPeriodicWindow(now, *period)) return std::nullopt;
    return expect(fmt::format("a burst every {:.0f} s, the next expected in {:.0f} s",
                              period->count(), (next - now).count()));
  }
  Seconds gap{0};
  for (size_t i = 1; i < bursts_.size(); ++i) {
    gap = std::max(gap, bursts_[i].onset - bursts_[i - 1].onset);
  }
  if (now - last.end > gap) return std::nullopt;
  return expect(fmt::format("{} bursts at no steady period, the last {:.0f} s ago",
                            bursts_.size(), since_end));
}

}  // namespace gpuscale::scale
