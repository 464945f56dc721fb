#include "metrics/metric_window.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/numbers.h"

namespace gpuscale::metrics {
namespace {

Seconds S(double s) { return Seconds{s}; }

TEST(SeriesWindowTest, EmptyWindowAnswersNothing) {
  SeriesWindow w;
  EXPECT_FALSE(w.Latest());
  EXPECT_FALSE(w.LatestTime());
  EXPECT_FALSE(w.Average(S(10), S(10)));
  EXPECT_FALSE(w.Max(S(10), S(10)));
  EXPECT_FALSE(w.Rate(S(10), S(10)));
  EXPECT_FALSE(w.Increase(S(10), S(10)));
}

TEST(SeriesWindowTest, AveragesAndMaxesSamplesInsideHalfOpenWindow) {
  SeriesWindow w;
  w.Add(S(0), 1);
  w.Add(S(10), 2);
  w.Add(S(20), 3);
  w.Add(S(30), 6);
  EXPECT_DOUBLE_EQ(*w.Average(S(30), S(20)), 4.5);  // (10, 30]: 3 and 6
  EXPECT_DOUBLE_EQ(*w.Average(S(30), S(30)), 11.0 / 3);
  EXPECT_DOUBLE_EQ(*w.Max(S(30), S(20)), 6);
  EXPECT_DOUBLE_EQ(*w.Max(S(20), S(20)), 3);  // samples after `now` are not seen
  EXPECT_FALSE(w.Average(S(100), S(20)));     // nothing in (80, 100]
  EXPECT_DOUBLE_EQ(*w.Latest(), 6);
  EXPECT_EQ(*w.LatestTime(), S(30));
}

TEST(SeriesWindowTest, RateHandlesCounterReset) {
  SeriesWindow w;
  w.Add(S(0), 0);
  w.Add(S(10), 100);
  w.Add(S(20), 250);
  w.Add(S(30), 30);  // replica restarted: counter began again at 0
  w.Add(S(40), 90);
  // Baseline 0 @ 0, then +100, +150, +30 (reset), +60.
  EXPECT_DOUBLE_EQ(*w.Increase(S(40), S(40)), 340);
  EXPECT_DOUBLE_EQ(*w.Rate(S(40), S(40)), 8.5);
  // Baseline 250 @ 20: +30 (reset), +60 over 20 s.
  EXPECT_DOUBLE_EQ(*w.Increase(S(40), S(20)), 90);
  EXPECT_DOUBLE_EQ(*w.Rate(S(40), S(20)), 4.5);
}

TEST(SeriesWindowTest, BackToBackWindowsPartitionTheIncrease) {
  SeriesWindow w;
  for (int t = 0; t <= 60; t += 15) w.Add(S(t), t * 2.0);
  EXPECT_DOUBLE_EQ(*w.Increase(S(30), S(30)) + *w.Increase(S(60), S(30)),
                   *w.Increase(S(60), S(60)));
  EXPECT_DOUBLE_EQ(*w.Rate(S(60), S(60)), 2.0);
}

TEST(SeriesWindowTest, RateNeedsTwoSamples) {
  SeriesWindow w;
  w.Add(S(5), 10);
  EXPECT_FALSE(w.Rate(S(5), S(60)));
  EXPECT_FALSE(w.Increase(S(5), S(60)));
  w.Add(S(5), 12);  // same time: zero span
  EXPECT_FALSE(w.Rate(S(5), S(60)));
  EXPECT_DOUBLE_EQ(*w.Increase(S(5), S(60)), 2);
}

TEST(SeriesWindowTest, EvictsBeyondRetentionButKeepsBaseline) {
  SeriesWindow w(S(60));
  for (int t = 0; t <= 200; t += 10) w.Add(S(t), t);
  // Horizon 140: samples 150..200 plus the baseline at 140.
  EXPECT_EQ(w.size(), 7u);
  EXPECT_DOUBLE_EQ(*w.Average(S(200), S(1000)), 170);
  EXPECT_DOUBLE_EQ(*w.Increase(S(200), S(60)), 60);
}

TEST(SeriesWindowTest, DropsOutOfOrderSamplesAndSkipsNaN) {
  SeriesWindow w;
  w.Add(S(10), 1);
  w.Add(S(5), 100);  // older than the newest: dropped
  w.Add(S(20), std::nan(""));
  w.Add(S(30), 3);
  EXPECT_EQ(w.size(), 3u);
  EXPECT_DOUBLE_EQ(*w.Average(S(30), S(30)), 2);
  EXPECT_DOUBLE_EQ(*w.Max(S(30), S(30)), 3);
  EXPECT_DOUBLE_EQ(*w.Rate(S(30), S(30)), 0.1);  // (3 - 1) over 20 s
}

// Buckets le 0.5, 1, 2, +Inf; 50 observations between t=10 and t=20.
class HistogramWindowTest : public ::testing::Test {
 protected:
  void AddScrape(double t, std::vector<double> counts, double sum) {
    w_.Add(S(t), bounds_, counts, sum);
  }
  void SetUp() override {
    AddScrape(0, {0, 0, 0, 0}, 0);
    AddScrape(10, {10, 30, 40, 50}, 50);
    AddScrape(20, {20, 60, 90, 100}, 110);
  }
  std::vector<double> bounds_ = {0.5, 1, 2, kInf};
  HistogramWindow w_;
};

TEST_F(HistogramWindowTest, FractionAboveUsesLargestBoundAtOrBelowThreshold) {
  // Increase over (10, 20]: buckets {10, 30, 50, 50}.
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(20), S(10), 1.0), 0.4);
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(20), S(10), 1.5), 0.4);  // falls back to le=1
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(20), S(10), 2.0), 0.0);
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(20), S(10), 0.4), 1.0);  // below every bound
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(20), S(20), 1.0), 0.4);  // {20, 60, 90, 100}
}

TEST_F(HistogramWindowTest, QuantileInterpolatesInsideBucket) {
  EXPECT_DOUBLE_EQ(*w_.Quantile(S(20), S(10), 0.5), 0.875);          // 0.5 + 0.5 * 15/20
  EXPECT_DOUBLE_EQ(*w_.Quantile(S(20), S(10), 0.9), 1.75);           // 1 + 1 * 15/20
  EXPECT_DOUBLE_EQ(*w_.Quantile(S(20), S(10), 0.1), 0.25);           // 0 + 0.5 * 5/10
  EXPECT_DOUBLE_EQ(*w_.Quantile(S(20), S(20), 0.7), 1 + 10.0 / 30);  // rank 70 in (1, 2]
  EXPECT_FALSE(w_.Quantile(S(20), S(10), 1.5));
  EXPECT_FALSE(w_.Quantile(S(20), S(10), std::nan("")));
}

TEST_F(HistogramWindowTest, QuantileInInfBucketReturnsLargestFiniteBound) {
  AddScrape(30, {20, 60, 90, 110}, 400);
  EXPECT_DOUBLE_EQ(*w_.Quantile(S(30), S(10), 0.5), 2.0);
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(30), S(10), 2.0), 1.0);
}

TEST_F(HistogramWindowTest, MeanAndObservationRate) {
  EXPECT_DOUBLE_EQ(*w_.Mean(S(20), S(10)), 1.2);  // 60 s over 50 observations
  EXPECT_DOUBLE_EQ(*w_.ObservationRate(S(20), S(10)), 5.0);
  EXPECT_DOUBLE_EQ(*w_.ObservationRate(S(20), S(20)), 5.0);
}

TEST_F(HistogramWindowTest, ResetCountsPostRestartValues) {
  AddScrape(40, {1, 2, 3, 4}, 5);
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(40), S(20), 1.0), 0.5);  // 1 - 2/4
  EXPECT_DOUBLE_EQ(*w_.Mean(S(40), S(20)), 1.25);
}

TEST_F(HistogramWindowTest, SeveralResetsInOneWindow) {
  AddScrape(30, {1, 2, 3, 4}, 5);  // restart
  AddScrape(40, {2, 4, 6, 8}, 10);
  AddScrape(50, {0, 1, 1, 1}, 1);  // restart again
  AddScrape(60, {1, 2, 2, 2}, 3);
  // {20,60,90,100} + {1,2,3,4} + {1,2,3,4} + {0,1,1,1} + {1,1,1,1} = {23,66,98,110}.
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(60), S(60), 1.0), 1 - 66.0 / 110);
  EXPECT_DOUBLE_EQ(*w_.Mean(S(60), S(60)), 123.0 / 110);  // sums 110 + 5 + 5 + 1 + 2
  EXPECT_DOUBLE_EQ(*w_.ObservationRate(S(60), S(60)), 110.0 / 60);
}

TEST_F(HistogramWindowTest, OneBucketGoingDownIsAReset) {
  AddScrape(30, {25, 55, 95, 105}, 120);  // total grew, but le=1 fell: a new process
  EXPECT_DOUBLE_EQ(*w_.FractionAbove(S(30), S(10), 1.0), 1 - 55.0 / 105);
}

TEST_F(HistogramWindowTest, WindowWithoutObservationsAnswersNothing) {
  AddScrape(30, {20, 60, 90, 100}, 110);
  EXPECT_FALSE(w_.FractionAbove(S(30), S(10), 1.0));
  EXPECT_FALSE(w_.Quantile(S(30), S(10), 0.5));
  EXPECT_FALSE(w_.Mean(S(30), S(10)));
  EXPECT_DOUBLE_EQ(*w_.ObservationRate(S(30), S(10)), 0.0);
  EXPECT_FALSE(w_.ObservationRate(S(500), S(10)));  // no scrape at all in the window
}

TEST_F(HistogramWindowTest, NewBucketLayoutStartsAFreshHistory) {
  std::vector<double> other = {1, kInf};
  w_.Add(S(30), other, std::vector<double>{5, 8}, 9);
  EXPECT_EQ(w_.size(), 1u);
  EXPECT_EQ(w_.upper_bounds(), other);
  EXPECT_FALSE(w_.Quantile(S(30), S(30), 0.5));
}

TEST(HistogramWindowRetentionTest, EvictsOldScrapes) {
  HistogramWindow w(S(30));
  std::vector<double> bounds = {1, kInf};
  for (int t = 0; t <= 100; t += 10) {
    w.Add(S(t), bounds, std::vector<double>{t * 1.0, t * 2.0}, t * 3.0);
  }
  EXPECT_EQ(w.size(), 4u);  // 70 (baseline), 80, 90, 100
  EXPECT_DOUBLE_EQ(*w.ObservationRate(S(100), S(1000)), 2.0);
  EXPECT_DOUBLE_EQ(*w.FractionAbove(S(100), S(1000), 1.0), 0.5);
}

TEST(HistogramWindowRetentionTest, IgnoresMismatchedInput) {
  HistogramWindow w;
  std::vector<double> bounds = {1, kInf};
  w.Add(S(0), bounds, std::vector<double>{1}, 0);
  w.Add(S(0), {}, {}, 0);
  EXPECT_TRUE(w.empty());
}

}  // namespace
}  // namespace gpuscale::metrics
