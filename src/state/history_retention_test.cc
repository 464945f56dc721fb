#include "state/history_retention.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscale::state {
namespace {

class HistoryRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::Store::Open(":memory:", Seconds{0});
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
  }
  // One decision and one event at each second of [from, from + count), ~1 KB of text each.
  void AddHistory(double from, int count) {
    ASSERT_TRUE(store_->database().Exec("BEGIN"));
    for (int i = 0; i < count; ++i) {
      store::DecisionRow d;
      d.service = "chat";
      d.at = Seconds{from + i};
      d.policy = "target";
      d.reason = std::string(1000, 'r');
      ASSERT_TRUE(store_->decisions().Append(d));
      ASSERT_TRUE(store_->events().Append(store::EventRow{
          0, Seconds{from + i}, "chat", "replica_started", "chat-0", std::string(1000, 'm'), ""}));
    }
    ASSERT_TRUE(store_->database().Exec("COMMIT"));
  }
  Seconds Oldest(bool decisions) {
    auto at = decisions ? store_->decisions().OldestAt() : store_->events().OldestAt();
    EXPECT_TRUE(at);
    return at->value_or(Seconds{-1});
  }
  int64_t Used() { return *store_->UsedBytes(); }

  std::unique_ptr<store::Store> store_;
};

RetentionConfig RetentionOf(double max_age_seconds, int64_t max_bytes) {
  RetentionConfig config;
  config.max_age = Seconds{max_age_seconds};
  config.max_bytes = max_bytes;
  return config;
}

TEST_F(HistoryRetentionTest, RowsPastTheAgeGoAtTheFirstRunThenHourly) {
  AddHistory(0, 100);  // at 0..99
  HistoryRetention retention(*store_);
  const RetentionConfig config = RetentionOf(50, 0);
  auto first = retention.Run(config, Seconds{100});  // older than 50 s: at 0..49
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->by_age, 100);  // 50 decisions and 50 events
  EXPECT_EQ(first->by_size, 0);
  EXPECT_EQ(Oldest(true), Seconds{50});
  EXPECT_EQ(Oldest(false), Seconds{50});
  // Not due again before an hour has passed, though rows have aged meanwhile.
  EXPECT_EQ(retention.Run(config, Seconds{3000})->by_age, 0);
  EXPECT_EQ(retention.Run(config, Seconds{3701})->by_age, 100);
}

TEST_F(HistoryRetentionTest, ABacklogIsWorkedOffABatchPerRunTickAfterTick) {
  const int rows = HistoryRetention::kBatch * 2 + 100;
  AddHistory(0, rows);
  HistoryRetention retention(*store_);
  const RetentionConfig config = RetentionOf(1, 0);
  const Seconds now{rows + 10.0};
  // A full batch from each table, then the next tick goes on at once (no hour's wait).
  EXPECT_EQ(retention.Run(config, now)->by_age, 2 * HistoryRetention::kBatch);
  EXPECT_EQ(retention.Run(config, now + Seconds{1})->by_age, 2 * HistoryRetention::kBatch);
  EXPECT_EQ(retention.Run(config, now + Seconds{2})->by_age, 200);
  EXPECT_EQ(retention.Run(config, now + Seconds{3})->by_age, 0);
  EXPECT_FALSE(*store_->decisions().OldestAt());
}

TEST_F(HistoryRetentionTest, OverTheSizeCapTheOldestHistoryGoesUntilUnderNinetyPercent) {
  AddHistory(1000, 2000);  // at 1000..2999, ~4 MB
  const int64_t full = Used();
  const int64_t cap = full / 2;
  HistoryRetention retention(*store_);
  const RetentionConfig config = RetentionOf(1e9, cap);  // the age never applies
  int64_t deleted = 0;
  int runs = 0;
  for (Seconds now{3000}; runs < 100; now += Seconds{1}, ++runs) {
    auto trimmed = retention.Run(config, now);
    ASSERT_TRUE(trimmed) << trimmed.error().ToString();
    EXPECT_EQ(trimmed->by_age, 0);
    EXPECT_TRUE(trimmed->stuck.empty()) << trimmed->stuck;
    if (trimmed->by_size == 0) break;
    deleted += trimmed->by_size;
  }
  EXPECT_LT(runs, 100) << "trimming did not end";
  EXPECT_GT(runs, 1) << "a tenth of the span per run: several runs to halve it";
  EXPECT_LE(Used(), cap / 10 * 9);
  EXPECT_GT(Used(), cap / 4) << "trimmed far past the goal";
  // The oldest went first, from both tables alike; the newest are kept.
  EXPECT_GT(Oldest(true), Seconds{1000});
  EXPECT_NEAR(Oldest(true).count(), Oldest(false).count(), 1);
  EXPECT_EQ(store_->decisions().Recent("chat", 1)->front().at, Seconds{2999});
  EXPECT_GT(deleted, 0);
  // Under the cap, the size is checked again only after a minute, and nothing goes.
  EXPECT_EQ(retention.Run(config, Seconds{3100})->by_size, 0);
}

TEST_F(HistoryRetentionTest, ACapThatOnlyOtherTablesPassIsReportedOnceNotTrimmedForever) {
  HistoryRetention retention(*store_);
  const RetentionConfig config = RetentionOf(1e9, 1);  // one byte: the empty schema passes it
  auto first = retention.Run(config, Seconds{10});
  ASSERT_TRUE(first);
  EXPECT_NE(first->stuck.find("no decision or event left to delete"), std::string::npos)
      << first->stuck;
  EXPECT_NE(first->stuck.find("retention.max_megabytes"), std::string::npos);
  EXPECT_TRUE(retention.Run(config, Seconds{11})->stuck.empty()) << "not due for a minute";
  EXPECT_TRUE(retention.Run(config, Seconds{100})->stuck.empty()) << "said once per spell";
}

TEST_F(HistoryRetentionTest, ZeroMaxBytesMeansNoSizeCap) {
  AddHistory(0, 500);
  HistoryRetention retention(*store_);
  auto trimmed = retention.Run(RetentionOf(1e9, 0), Seconds{600});
  ASSERT_TRUE(trimmed);
  EXPECT_EQ(trimmed->by_size, 0);
  EXPECT_EQ(Oldest(true), Seconds{0});
}

}  // namespace
}  // namespace gpuscale::state
