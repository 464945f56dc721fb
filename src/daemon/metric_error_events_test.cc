#include "daemon/metric_error_events.h"

#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

using Errors = std::vector<std::string>;

TEST(MetricErrorEventsTest, ASpellIsOneEventAtItsStartAndOneAtItsEnd) {
  MetricErrorEvents log;
  EXPECT_FALSE(log.Observe({}, Seconds{0}));
  auto start = log.Observe({"r1: stale"}, Seconds{1});
  ASSERT_TRUE(start);
  EXPECT_EQ(start->kind, events::EventKind::kMetricsError);
  EXPECT_EQ(start->message, "r1: stale");
  // Flapping within the spell: stale, fresh, stale again, other replicas... no events.
  EXPECT_FALSE(log.Observe({"r1: stale"}, Seconds{2}));
  EXPECT_FALSE(log.Observe({}, Seconds{3}));
  EXPECT_FALSE(log.Observe({"r2: stale"}, Seconds{4}));
  EXPECT_FALSE(log.Observe({"r1: stale", "r2: stale"}, Seconds{5}));
  EXPECT_FALSE(log.Observe({}, Seconds{6}));
  EXPECT_FALSE(log.Observe({}, Seconds{6} + MetricErrorEvents::kRecoveredAfter - Seconds{1}));
  auto end = log.Observe({}, Seconds{6} + MetricErrorEvents::kRecoveredAfter);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->kind, events::EventKind::kMetricsRecovered);
  EXPECT_EQ(end->message, "metrics read again (2 more changes of the errors since the last event)");
  EXPECT_FALSE(log.Observe({}, Seconds{1000}));
  auto next = log.Observe({"r3: refused"}, Seconds{1001});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->message, "r3: refused");
}

TEST(MetricErrorEventsTest, ChangingErrorsAreUpdatedAtMostOncePerPeriod) {
  MetricErrorEvents log;
  ASSERT_TRUE(log.Observe({"a"}, Seconds{0}));
  EXPECT_FALSE(log.Observe({"b"}, Seconds{10}));
  EXPECT_FALSE(log.Observe({"c"}, Seconds{20}));
  EXPECT_FALSE(log.Observe({"c"}, MetricErrorEvents::kUpdateEvery - Seconds{1}));
  auto update = log.Observe({"c"}, MetricErrorEvents::kUpdateEvery);
  ASSERT_TRUE(update);
  EXPECT_EQ(update->kind, events::EventKind::kMetricsError);
  EXPECT_EQ(update->message, "c (1 more change since the last event)");
  // Unchanged errors never repeat.
  EXPECT_FALSE(log.Observe({"c"}, MetricErrorEvents::kUpdateEvery * 3));
}

TEST(MetricErrorEventsTest, AMessageNamesAFewErrorsAndCountsTheRest) {
  EXPECT_EQ(SummarizeErrors({"a", "b"}, 3), "a; b");
  EXPECT_EQ(SummarizeErrors({"a", "b", "c", "d", "e"}, 3), "a; b; c; and 2 more");
  EXPECT_EQ(SummarizeErrors({}, 3), "");
}

}  // namespace
}  // namespace gpuscale::daemon
