#include "metrics/metric_window.h"

#include <algorithm>
#include <cmath>

namespace gpuscale::metrics {
namespace {

// Index range [first, last) of `samples` (ordered by .t) with t in (now-window, now].
// Binary search: windows are queried every tick over histories of hundreds of samples.
template <typename Deque>
std::pair<size_t, size_t> SamplesInWindow(const Deque& samples, Seconds now, Seconds window) {
  const Seconds start = now - window;
  auto first = std::upper_bound(samples.begin(), samples.end(), start,
                                [](Seconds v, const auto& s) { return v < s.t; });
  auto last =
      std::upper_bound(first, samples.end(), now, [](Seconds v, const auto& s) { return v < s.t; });
  return {static_cast<size_t>(first - samples.begin()),
          static_cast<size_t>(last - samples.begin())};
}

// The window range extended back by one sample: the newest one at or before now-window,
// which is the baseline for counter increases (see the header).
template <typename Deque>
std::pair<size_t, size_t> SamplesWithBaseline(const Deque& samples, Seconds now, Seconds window) {
  auto [first, last] = SamplesInWindow(samples, now, window);
  if (first > 0 && first < last) --first;
  return {first, last};
}

// Drops samples that are older than the retention horizon, keeping the newest of those as the
// baseline for a window that starts exactly at the horizon.
template <typename Deque>
void Evict(Deque& samples, Seconds newest, Seconds retention) {
  const Seconds horizon = newest - retention;
  while (samples.size() >= 2 && samples[1].t <= horizon) samples.pop_front();
}

}  // namespace

SeriesWindow::SeriesWindow(Seconds retention) : retention_(retention) {}

void SeriesWindow::Add(Seconds t, double value) {
  if (!samples_.empty() && t < samples_.back().t) return;  // out of order: see header
  samples_.push_back({t, value});
  Evict(samples_, t, retention_);
}

std::optional<double> SeriesWindow::Latest() const {
  if (samples_.empty()) return std::nullopt;
  return samples_.back().value;
}

std::optional<Seconds> SeriesWindow::LatestTime() const {
  if (samples_.empty()) return std::nullopt;
  return samples_.back().t;
}

std::pair<size_t, size_t> SeriesWindow::InWindow(Seconds now, Seconds window) const {
  return SamplesInWindow(samples_, now, window);
}

std::pair<size_t, size_t> SeriesWindow::WithBaseline(Seconds now, Seconds window) const {
  return SamplesWithBaseline(samples_, now, window);
}

std::optional<double> SeriesWindow::Average(Seconds now, Seconds window) const {
  auto [first, last] = InWindow(now, window);
  double total = 0;
  size_t n = 0;
  for (size_t i = first; i < last; ++i) {
    if (std::isnan(samples_[i].value)) continue;
    total += samples_[i].value;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return total / static_cast<double>(n);
}

std::optional<double> SeriesWindow::Max(Seconds now, Seconds window) const {
  auto [first, last] = InWindow(now, window);
  std::optional<double> best;
  for (size_t i = first; i < last; ++i) {
    const double v = samples_[i].value;
    if (std::isnan(v)) continue;
    if (!best || v > *best) best = v;
  }
  return best;
}

std::optional<double> SeriesWindow::Increase(Seconds now, Seconds window) const {
  auto [first, last] = WithBaseline(now, window);
  std::optional<double> prev;
  size_t used = 0;
  double increase = 0;
  for (size_t i = first; i < last; ++i) {
    const double v = samples_[i].value;
    if (std::isnan(v)) continue;
    // A drop means the counter restarted from zero (PromQL rate/increase reset rule).
    if (prev) increase += v >= *prev ? v - *prev : v;
    prev = v;
    ++used;
  }
  if (used < 2) return std::nullopt;
  return increase;
}

std::optional<double> SeriesWindow::Rate(Seconds now, Seconds window) const {
  auto [first, last] = WithBaseline(now, window);
  // The span runs between the first and last non-NaN samples that Increase used.
  while (first < last && std::isnan(samples_[first].value)) ++first;
  while (last > first && std::isnan(samples_[last - 1].value)) --last;
  if (last - first < 2) return std::nullopt;
  const double span_seconds = (samples_[last - 1].t - samples_[first].t).count();
  if (span_seconds <= 0) return std::nullopt;
  auto increase = Increase(now, window);
  if (!increase) return std::nullopt;
  return *increase / span_seconds;
}

HistogramWindow::HistogramWindow(Seconds retention) : retention_(retention) {}

void HistogramWindow::Add(Seconds t, std::span<const double> upper_bounds,
                          std::span<const double> cumulative_counts, double sum) {
  if (upper_bounds.empty() || upper_bounds.size() != cumulative_counts.size()) return;
  if (!snapshots_.empty() && t < snapshots_.back().t) return;
  if (!std::equal(upper_bounds.begin(), upper_bounds.end(), upper_bounds_.begin(),
                  upper_bounds_.end())) {
    // A new bucket layout cannot be subtracted from the old one: start a fresh history.
    snapshots_.clear();
    upper_bounds_.assign(upper_bounds.begin(), upper_bounds.end());
  }
  Snapshot snapshot{t, std::vector<double>(cumulative_counts.begin(), cumulative_counts.end()), sum,
                    false};
  if (!snapshots_.empty()) {
    // Any bucket going down means the replica restarted: its counters began again at zero.
    // Decided once here so that queries need not compare every bucket of every pair.
    const std::vector<double>& prev = snapshots_.back().cumulative_counts;
    for (size_t b = 0; b < prev.size() && !snapshot.reset; ++b) {
      snapshot.reset = snapshot.cumulative_counts[b] < prev[b];
    }
  }
  snapshots_.push_back(std::move(snapshot));
  Evict(snapshots_, t, retention_);
}

void HistogramWindow::AddSegment(size_t from, size_t to, Delta& delta) const {
  const Snapshot& a = snapshots_[from];
  const Snapshot& b = snapshots_[to];
  for (size_t i = 0; i < a.cumulative_counts.size(); ++i) {
    delta.cumulative_counts[i] += b.cumulative_counts[i] - a.cumulative_counts[i];
  }
  delta.sum += b.sum - a.sum;
}

// Between resets, a counter's increase is last minus first, so the cost is O(snapshots) to
// find resets plus O(buckets) per reset-free segment, not O(snapshots x buckets).
std::optional<HistogramWindow::Delta> HistogramWindow::Increase(Seconds now, Seconds window) const {
  auto [first, last] = SamplesWithBaseline(snapshots_, now, window);
  if (last - first < 2) return std::nullopt;
  const size_t buckets = upper_bounds_.size();
  Delta delta;
  delta.cumulative_counts.assign(buckets, 0.0);
  size_t segment_start = first;
  for (size_t i = first + 1; i < last; ++i) {
    if (!snapshots_[i].reset) continue;
    AddSegment(segment_start, i - 1, delta);
    // After a restart, everything the new process counted is increase (PromQL reset rule).
    for (size_t b = 0; b < buckets; ++b)
      delta.cumulative_counts[b] += snapshots_[i].cumulative_counts[b];
    delta.sum += snapshots_[i].sum;
    segment_start = i;
  }
  AddSegment(segment_start, last - 1, delta);
  // Floating-point noise (or a buggy exporter) can make cumulative counts dip; like PromQL's
  // histogram_quantile, force them monotonic so that fractions stay within [0, 1].
  for (size_t b = 1; b < buckets; ++b) {
    delta.cumulative_counts[b] =
        std::max(delta.cumulative_counts[b], delta.cumulative_counts[b - 1]);
  }
  delta.count = delta.cumulative_counts.back();
  delta.span = snapshots_[last - 1].t - snapshots_[first].t;
  return delta;
}

std::optional<double> HistogramWindow::FractionAbove(Seconds now, Seconds window,
                                                     double threshold) const {
  auto delta = Increase(now, window);
  if (!delta || !(delta->count > 0)) return std::nullopt;
  // Buckets whose bound is <= threshold: the last of them holds everything known to be fast.
  auto it = std::upper_bound(upper_bounds_.begin(), upper_bounds_.end(), threshold);
  if (it == upper_bounds_.begin()) return 1.0;
  const double at_or_below = delta->cumulative_counts[(it - upper_bounds_.begin()) - 1];
  return std::clamp(1.0 - at_or_below / delta->count, 0.0, 1.0);
}

std::optional<double> HistogramWindow::Quantile(Seconds now, Seconds window, double q) const {
  if (!(q >= 0.0 && q <= 1.0)) return std::nullopt;
  auto delta = Increase(now, window);
  if (!delta || !(delta->count > 0)) return std::nullopt;
  const std::vector<double>& counts = delta->cumulative_counts;
  const double rank = q * delta->count;
  // First bucket whose cumulative count reaches the rank (PromQL bucketQuantile).
  size_t b = std::lower_bound(counts.begin(), counts.end(), rank) - counts.begin();
  if (b >= counts.size()) b = counts.size() - 1;
  const double upper = upper_bounds_[b];
  if (std::isinf(upper)) {
    // The rank lies above every finite bound: the best known answer is the largest one.
    if (b == 0) return std::nullopt;  // only a +Inf bucket: no bound to report
    return upper_bounds_[b - 1];
  }
  double lower = 0.0;
  double below = 0.0;
  if (b > 0) {
    lower = upper_bounds_[b - 1];
    below = counts[b - 1];
  } else if (upper <= 0) {
    return upper;  // no lower edge to interpolate from
  }
  const double in_bucket = counts[b] - below;
  if (in_bucket <= 0) return upper;
  return lower + (upper - lower) * ((rank - below) / in_bucket);
}

std::optional<double> HistogramWindow::Mean(Seconds now, Seconds window) const {
  auto delta = Increase(now, window);
  if (!delta || !(delta->count > 0)) return std::nullopt;
  return delta->sum / delta->count;
}

std::optional<double> HistogramWindow::ObservationRate(Seconds now, Seconds window) const {
  auto delta = Increase(now, window);
  if (!delta || delta->span.count() <= 0) return std::nullopt;
  return delta->count / delta->span.count();
}

}  // namespace gpuscale::metrics
