#include "daemon/service_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace gpuscale::daemon {
namespace {

HistorySample Tick(double at, int desired, double value, std::optional<double> rps = {}) {
  HistorySample s;
  s.at = Seconds{at};
  s.desired = desired;
  s.ready = desired - 1;
  s.current = desired;
  s.inputs = {{"queue", value, 5.0}};
  if (rps) {
    GatewayFigures g;
    g.request_rate = rps;
    g.in_flight = 3;
    s.gateway = g;
  }
  return s;
}

// Recent ticks come back at tick resolution, with their inputs and gateway figures.
TEST(ServiceHistoryTest, RecentTicksAtTickResolution) {
  ServiceHistory h;
  for (int t = 0; t < 300; ++t) h.Record(Tick(1000 + t, 2 + t / 100, t, 10.0));
  Result<HistorySeries> s = h.Query(Seconds{1200}, Seconds{1300}, Seconds{0});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->step, Seconds{1});
  ASSERT_EQ(s->t.size(), 100u);
  EXPECT_EQ(s->t[0], 1200);
  EXPECT_EQ(s->desired[0], 4);
  EXPECT_EQ(s->ready[0], 3);
  ASSERT_EQ(s->metrics.size(), 1u);
  EXPECT_EQ(s->metrics[0].name, "queue");
  EXPECT_EQ(s->metrics[0].value[5], 205);
  EXPECT_EQ(s->metrics[0].target[5], 5);
  EXPECT_EQ(s->gateway[0][5], 10);  // requests_per_second
  EXPECT_EQ(s->gateway[6][5], 3);   // in_flight
}

// A young daemon (history shorter than the range) still answers a recent range per tick.
TEST(ServiceHistoryTest, RecentRangeOlderThanTheFirstTickKeepsTickResolution) {
  ServiceHistory h;
  for (int t = 0; t < 30; ++t) h.Record(Tick(1000 + t, 2, t));
  Result<HistorySeries> s = h.Query(Seconds{1030 - 600}, Seconds{1030}, Seconds{0});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->step, Seconds{1});
}

// Older than the fine span: one point per minute, the minute's mean (counts: its last tick);
// a coarser step averages the points it covers and leaves empty steps null.
TEST(ServiceHistoryTest, OlderTicksAreMinuteMeans) {
  HistoryOptions options;
  options.fine_span = Seconds{120};
  ServiceHistory h(options);
  for (int t = 0; t < 600; ++t) h.Record(Tick(t, t < 60 ? 1 : 2, t < 60 ? 10 : 20));
  Result<HistorySeries> s = h.Query(Seconds{0}, Seconds{240}, Seconds{60});
  ASSERT_TRUE(s) << s.error().ToString();
  ASSERT_EQ(s->t.size(), 4u);
  EXPECT_EQ(s->metrics[0].value[0], 10);
  EXPECT_EQ(s->desired[0], 1);
  EXPECT_EQ(s->metrics[0].value[1], 20);
  EXPECT_EQ(s->desired[1], 2);
  EXPECT_FALSE(s->gateway[0][0]);  // no gateway traffic: null
  // step 0 over a range older than the fine span picks the coarse step.
  s = h.Query(Seconds{0}, Seconds{300}, Seconds{0});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, Seconds{60});
  // A range before anything was recorded: every step null.
  s = h.Query(Seconds{-600}, Seconds{-300}, Seconds{60});
  ASSERT_TRUE(s);
  for (const auto& v : s->desired) EXPECT_FALSE(v);
}

// Missing values stay missing: a tick whose metric had no data does not pull a mean to 0.
TEST(ServiceHistoryTest, MissingValuesAreNotZeros) {
  ServiceHistory h;
  HistorySample a = Tick(0, 1, 8);
  HistorySample b = Tick(1, 1, 0);
  b.inputs[0].value.reset();
  h.Record(a);
  h.Record(b);
  Result<HistorySeries> s = h.Query(Seconds{0}, Seconds{2}, Seconds{2});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->metrics[0].value[0], 8);
}

TEST(ServiceHistoryTest, BadRangesNameTheParameter) {
  ServiceHistory h;
  struct Case {
    double from, to, step;
    std::string field;
  } cases[] = {
      {10, 10, 1, "from"},
      {20, 10, 1, "from"},
      {0, 10, -1, "step"},
      {0, 100000, 1, "step"},  // 100,000 points
  };
  for (const Case& c : cases) {
    Result<HistorySeries> s = h.Query(Seconds{c.from}, Seconds{c.to}, Seconds{c.step});
    ASSERT_FALSE(s) << c.from << " " << c.to << " " << c.step;
    EXPECT_EQ(s.error().field, c.field);
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(HistoryBookTest, AServiceWithNothingRecordedHasEveryStepEmpty) {
  HistoryBook book;
  auto empty = [](const Result<HistorySeries>& s) {
    return s && !s->t.empty() &&
           std::all_of(s->ready.begin(), s->ready.end(), [](auto v) { return !v; });
  };
  EXPECT_TRUE(empty(book.Query("chat", Seconds{0}, Seconds{10}, Seconds{1})));
  book.Record("chat", Tick(1, 1, 1));
  EXPECT_FALSE(empty(book.Query("chat", Seconds{0}, Seconds{10}, Seconds{1})));
  book.Forget("chat");
  EXPECT_TRUE(empty(book.Query("chat", Seconds{0}, Seconds{10}, Seconds{1})));
  EXPECT_FALSE(book.Query("chat", Seconds{10}, Seconds{0}, Seconds{1})) << "ranges still checked";
}

}  // namespace
}  // namespace gpuscale::daemon
