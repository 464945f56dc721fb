#include "metrics/bucket_histogram.h"

#include <algorithm>

namespace gpuscale::metrics {

std::vector<double> VllmTokenCountBuckets(int64_t max_tokens) {
  std::vector<double> bounds;
  for (int64_t power = 1; power <= max_tokens; power *= 10) {
    for (int64_t mantissa : {1, 2, 5}) {
      if (mantissa * power > max_tokens) return bounds;
      bounds.push_back(static_cast<double>(mantissa * power));
    }
    if (power > max_tokens / 10) break;  // the next power would overflow or exceed the cap
  }
  return bounds;
}

BucketHistogram::BucketHistogram(std::span<const double> upper_bounds)
    : upper_bounds_(upper_bounds.begin(), upper_bounds.end()),
      bucket_counts_(upper_bounds.size(), 0) {}

void BucketHistogram::Observe(double value) {
  ++count_;
  sum_ += value;
  // First bound >= value; values above the last bound land only in the implicit +Inf bucket.
  auto it = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value);
  if (it != upper_bounds_.end()) ++bucket_counts_[static_cast<size_t>(it - upper_bounds_.begin())];
}

std::vector<double> BucketHistogram::CumulativeCounts() const {
  std::vector<double> cumulative(bucket_counts_.size());
  int64_t running = 0;
  for (size_t i = 0; i < bucket_counts_.size(); ++i) {
    running += bucket_counts_[i];
    cumulative[i] = static_cast<double>(running);
  }
  return cumulative;
}

}  // namespace gpuscale::metrics
