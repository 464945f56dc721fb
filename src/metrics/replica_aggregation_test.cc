#include "metrics/replica_aggregation.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/numbers.h"

namespace gpuscale::metrics {
namespace {

// A counter scraped at 0 and 10 s, having grown by `increase`.
SeriesWindow CounterGrowing(double increase) {
  SeriesWindow w;
  w.Add(Seconds{0}, 100);
  w.Add(Seconds{10}, 100 + increase);
  return w;
}

// A latency histogram (buckets 1 s, +Inf) scraped at 0 and 10 s: `fast` observations at or
// under 1 s and `slow` over it in between.
HistogramWindow LatenciesSplit(double fast, double slow) {
  HistogramWindow h;
  const std::vector<double> bounds = {1.0, kInf};
  h.Add(Seconds{0}, bounds, std::vector<double>{0, 0}, 0);
  h.Add(Seconds{10}, bounds, std::vector<double>{fast, fast + slow}, 0);
  return h;
}

TEST(ReplicaAggregationTest, SumOfRatesAddsEveryReplicaWithARate) {
  const SeriesWindow a = CounterGrowing(50), b = CounterGrowing(20);
  SeriesWindow single;  // one sample: no rate, left out (not counted as 0)
  single.Add(Seconds{10}, 7);
  const std::vector<const SeriesWindow*> replicas = {&a, &single, &b};
  const auto sum = SumOfRates(replicas, Seconds{10}, Seconds{30});
  ASSERT_TRUE(sum.has_value());
  EXPECT_DOUBLE_EQ(*sum, 5.0 + 2.0);
}

TEST(ReplicaAggregationTest, SumOfRatesIsNoDataWithoutAnyRate) {
  SeriesWindow single;
  single.Add(Seconds{10}, 7);
  EXPECT_FALSE(SumOfRates(std::vector<const SeriesWindow*>{&single}, Seconds{10}, Seconds{30}));
  EXPECT_FALSE(SumOfRates({}, Seconds{10}, Seconds{30}));
}

// PromQL's sum-of-rates ratio weights each replica by its traffic: 10 slow of 10 on one
// replica and 0 of 30 on another is 25 % slow, not the 50 % a mean of the two shares gives.
TEST(ReplicaAggregationTest, FractionAboveWeightsEachReplicaByItsObservationRate) {
  const HistogramWindow busy = LatenciesSplit(/*fast=*/30, /*slow=*/0);
  const HistogramWindow slow = LatenciesSplit(/*fast=*/0, /*slow=*/10);
  const std::vector<const HistogramWindow*> replicas = {&busy, &slow};
  const auto fraction = FractionAboveAcrossReplicas(replicas, Seconds{10}, Seconds{60}, 1.0);
  ASSERT_TRUE(fraction.has_value());
  EXPECT_DOUBLE_EQ(*fraction, 0.25);
}

TEST(ReplicaAggregationTest, FractionAboveIsNoDataWithoutObservations) {
  const HistogramWindow idle = LatenciesSplit(0, 0);
  HistogramWindow unscraped;
  const std::vector<const HistogramWindow*> replicas = {&idle, &unscraped};
  EXPECT_FALSE(FractionAboveAcrossReplicas(replicas, Seconds{10}, Seconds{60}, 1.0));
}

}  // namespace
}  // namespace gpuscale::metrics
