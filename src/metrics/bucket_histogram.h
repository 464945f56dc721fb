// A Prometheus-style histogram with fixed upper bounds, and the bucket layouts vLLM uses for
// its latency histograms: the emulator's vLLM-style /metrics and the gateway's own latency
// measurements use both.
//
// Ownership and thread-safety: a plain value; not synchronised (its owner guards it).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace gpuscale::metrics {

// vLLM's bucket bounds (vllm/v1/metrics/loggers.py), in seconds, so that dashboards and the
// scale policies' `le` selectors work unchanged against the emulator. The e2e layout is
// vLLM's request-latency layout: its queue, prefill, decode and inference time histograms
// use it too.
inline constexpr std::array<double, 21> kVllmE2eBucketsSeconds = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
inline constexpr std::array<double, 22> kVllmTtftBucketsSeconds = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
// vLLM's inter-token latency buckets, shared by its per-request time per output token.
inline constexpr std::array<double, 19> kVllmInterTokenBucketsSeconds = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};

// vLLM's buckets for a request's prompt and generation token counts: 1, 2, 5, 10, 20, 50,
// ... up to `max_tokens` (vLLM passes the model's max_model_len). Empty when max_tokens < 1.
std::vector<double> VllmTokenCountBuckets(int64_t max_tokens);

class BucketHistogram {
 public:
  // REQUIRES: upper_bounds finite and strictly ascending (the +Inf bucket is implicit).
  explicit BucketHistogram(std::span<const double> upper_bounds);

  // Counts `value` in every bucket whose bound is >= value (Prometheus `le` semantics).
  void Observe(double value);

  std::span<const double> upper_bounds() const { return upper_bounds_; }
  // Cumulative count per bound (same length as upper_bounds); count() is the +Inf bucket.
  std::vector<double> CumulativeCounts() const;
  int64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> upper_bounds_;
  std::vector<int64_t> bucket_counts_;  // non-cumulative, one per bound
  int64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace gpuscale::metrics
