// Metric windows: bounded in-memory histories of scraped samples, queried the way PromQL
// range functions are (avg/max_over_time, rate, increase, histogram_quantile) so that the
// autoscaler and the simulator read replicas' metrics through one piece of code.
//
// Pure: every time is a parameter (`Seconds`, any epoch: Unix time live, virtual time in the
// simulator); nothing here reads a clock or does I/O.
//
// Window semantics shared by all queries: a query at `now` over `window` looks at samples
// with t in (now - window, now]. Counter queries (Rate, Increase, and every HistogramWindow
// query) additionally use the newest sample at or before `now - window` as the baseline when
// it is still retained, so that back-to-back windows partition a counter's increase exactly
// (PromQL instead drops the increase between the last sample of one range and the first of
// the next, then extrapolates; exact partitioning makes simulator results reproducible and
// unit tests hand-checkable). Counter resets (a value lower than the previous one, e.g. a
// replica restart) are handled as PromQL does: the post-reset value counts as the increase.
//
// Retention: on every Add, samples older than `t - retention` are evicted, except the newest
// of them, which is kept as the baseline for windows that start exactly at the retention
// edge. Memory is O(samples in retention).
//
// Ownership and thread-safety: value types that own their samples. Not synchronised: const
// queries may run concurrently with each other, never with Add.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace gpuscale::metrics {

// Samples of one scalar series (a gauge or a counter) over time, bounded by retention.
class SeriesWindow {
 public:
  // `retention` bounds memory; queries over windows longer than it see only what is kept.
  explicit SeriesWindow(Seconds retention = Seconds{600});

  // REQUIRES: t non-decreasing across calls (an out-of-order sample is dropped, so a replayed
  // scrape cannot corrupt the history). NaN values are stored and returned by Latest, but
  // Average/Max/Rate/Increase skip them, as a NaN gauge means "unknown".
  void Add(Seconds t, double value);

  // The most recent value, regardless of time; nullopt when empty.
  std::optional<double> Latest() const;
  // Time of the most recent sample; nullopt when empty.
  std::optional<Seconds> LatestTime() const;

  // Mean of the samples in (now-window, now]; nullopt when there are none.
  std::optional<double> Average(Seconds now, Seconds window) const;
  // Largest sample in (now-window, now]; nullopt when there are none.
  std::optional<double> Max(Seconds now, Seconds window) const;
  // Counter increase per second over the window: Increase / (time of the last sample minus
  // time of the baseline or first sample). nullopt with fewer than two samples or zero span.
  std::optional<double> Rate(Seconds now, Seconds window) const;
  // Counter increase over the window, reset-aware; nullopt with fewer than two samples.
  std::optional<double> Increase(Seconds now, Seconds window) const;

  size_t size() const { return samples_.size(); }
  bool empty() const { return samples_.empty(); }
  Seconds retention() const { return retention_; }

 private:
  struct Sample {
    Seconds t;
    double value;
  };
  // Index range [first, last) of samples with t in (now-window, now].
  std::pair<size_t, size_t> InWindow(Seconds now, Seconds window) const;
  // Like InWindow, but first moves back one sample to include the baseline when retained.
  std::pair<size_t, size_t> WithBaseline(Seconds now, Seconds window) const;

  Seconds retention_;
  std::deque<Sample> samples_;  // ordered by t
};

// Cumulative histogram scrapes (Prometheus _bucket{le} + _count + _sum) over time.
class HistogramWindow {
 public:
  explicit HistogramWindow(Seconds retention = Seconds{600});

  // upper_bounds ascending, last may be +Inf; cumulative_counts same length. The last
  // cumulative count is taken as the total observation count (_count): Prometheus requires a
  // +Inf bucket, whose value equals _count. REQUIRES: t non-decreasing (older ones are
  // dropped). Mismatched lengths or empty spans are ignored. If the bounds differ from the
  // previous scrape's (a replica restarted with another bucket layout), the history is cleared
  // and starts again from this scrape.
  void Add(Seconds t, std::span<const double> upper_bounds,
           std::span<const double> cumulative_counts, double sum);

  // Share of observations in (now-window, now] above `threshold` seconds, from bucket increases
  // (uses the bucket whose bound is the largest <= threshold, like
  // 1 - increase(bucket{le=T}) / increase(count)); nullopt when no observations in the window.
  // A threshold below every bound counts every observation as above it (nothing is known to be
  // at or below it), erring towards "SLO violated".
  std::optional<double> FractionAbove(Seconds now, Seconds window, double threshold) const;
  // PromQL histogram_quantile semantics (linear interpolation in bucket): a rank in the +Inf
  // bucket returns the largest finite bound; the first bucket interpolates from 0 (if its
  // bound is positive). nullopt when no observations in the window or q is outside [0, 1].
  std::optional<double> Quantile(Seconds now, Seconds window, double q) const;
  // increase(sum)/increase(count); nullopt when no observations in the window.
  std::optional<double> Mean(Seconds now, Seconds window) const;
  // increase(count) per second over the span of samples used (see SeriesWindow::Rate); 0 when
  // the span holds no observations, nullopt with fewer than two samples.
  std::optional<double> ObservationRate(Seconds now, Seconds window) const;

  // Bucket upper bounds of the current history (empty before the first Add).
  const std::vector<double>& upper_bounds() const { return upper_bounds_; }
  size_t size() const { return snapshots_.size(); }
  bool empty() const { return snapshots_.empty(); }

 private:
  struct Snapshot {
    Seconds t;
    std::vector<double> cumulative_counts;  // one per upper bound
    double sum;
    bool reset;  // some count is lower than in the previous snapshot (a restart)
  };
  // Reset-aware increases of every bucket, the count and the sum over the samples used by a
  // query at (now, window); the span is last.t - first.t.
  struct Delta {
    std::vector<double> cumulative_counts;
    double count = 0;
    double sum = 0;
    Seconds span{0};
  };
  std::optional<Delta> Increase(Seconds now, Seconds window) const;
  // Adds snapshot `to` minus snapshot `from` (no reset between them) to `delta`.
  void AddSegment(size_t from, size_t to, Delta& delta) const;

  Seconds retention_;
  std::vector<double> upper_bounds_;
  std::deque<Snapshot> snapshots_;  // ordered by t
};

}  // namespace gpuscale::metrics
