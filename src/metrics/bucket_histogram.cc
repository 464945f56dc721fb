#include "metrics/bucket_histogram.h"

#include <algorithm>

namespace gpuscale::metrics {

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
