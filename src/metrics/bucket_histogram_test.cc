#include "metrics/bucket_histogram.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace gpuscale::metrics {
namespace {

// vLLM's build_1_2_5_buckets: 1, 2, 5 times powers of ten, up to and including the cap.
TEST(BucketHistogramTest, VllmTokenCountBucketsAreOneTwoFiveUpToTheCap) {
  struct Case {
    int64_t max_tokens;
    std::vector<double> expected;
  };
  const std::vector<Case> cases = {
      {0, {}},
      {1, {1}},
      {4, {1, 2}},
      {100, {1, 2, 5, 10, 20, 50, 100}},
      {8192, {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}},
      {INT64_MAX, {}},  // only its length is checked below: no overflow past 5e18
  };
  for (const Case& c : cases) {
    const std::vector<double> bounds = VllmTokenCountBuckets(c.max_tokens);
    if (c.max_tokens == INT64_MAX) {
      EXPECT_EQ(bounds.size(), 57u);  // 1 ... 5e18: 19 powers of ten, three bounds each
      continue;
    }
    EXPECT_EQ(bounds, c.expected) << c.max_tokens;
  }
}

TEST(BucketHistogramTest, ObserveCountsValuesAtOrBelowEachBound) {
  const std::vector<double> bounds = {1, 2, 5};
  BucketHistogram h(bounds);
  for (double v : {0.5, 1.0, 3.0, 9.0}) h.Observe(v);
  EXPECT_EQ(h.CumulativeCounts(), (std::vector<double>{2, 2, 3}));
  EXPECT_EQ(h.count(), 4);
  EXPECT_DOUBLE_EQ(h.sum(), 13.5);
}

}  // namespace
}  // namespace gpuscale::metrics
