#include "alloc/pool_budget.h"

#include <gtest/gtest.h>

namespace gpuscale::alloc {
namespace {

constexpr int kPrefill = 0;
constexpr int kDecode = 1;

PoolBudget Budget(int gpus, int prefill_min, int decode_min) {
  auto b = PoolBudget::Make(gpus, {{"prefill", prefill_min}, {"decode", decode_min}});
  EXPECT_TRUE(b.has_value()) << b.error().message;
  return *b;
}

TEST(PoolBudgetTest, RefusesMinimumsOverTheBudget) {
  auto b = PoolBudget::Make(4, {{"prefill", 2}, {"decode", 3}});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().field, "gpu_budget");
  EXPECT_NE(b.error().message.find("5 GPUs"), std::string::npos) << b.error().message;
  EXPECT_FALSE(PoolBudget::Make(0, {}).has_value());
}

// Dynamo #12428: a prefill scale-up to its own max must neither exceed the budget nor take
// the GPUs the decode pool needs for its minimum.
TEST(PoolBudgetTest, PrefillScaleUpNeverStarvesDecodeMinimumNorExceedsBudget) {
  PoolBudget b = Budget(8, 1, 3);
  int granted = 0;
  for (int i = 0; i < 20; ++i) granted += b.Acquire(kPrefill, 1).has_value() ? 1 : 0;
  EXPECT_EQ(granted, 5);  // 8 - decode's 3 owed GPUs
  EXPECT_EQ(b.held(kPrefill), 5);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.Acquire(kDecode, 1).has_value()) << i;
  EXPECT_EQ(b.total_held(), 8);
  Status over = b.Acquire(kDecode, 1);
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(over.error().message.find("budget"), std::string::npos);
}

struct AcquireCase {
  const char* name;
  int budget, prefill_min, decode_min;
  int prefill_held, decode_held;  // acquired before, one GPU at a time
  int pool, gpus;
  bool granted;
};

TEST(PoolBudgetTest, AcquireTable) {
  const AcquireCase cases[] = {
      {"fits", 8, 1, 1, 1, 1, kPrefill, 2, true},
      {"exactly the budget", 8, 1, 1, 3, 3, kDecode, 2, true},
      {"over the budget", 8, 1, 1, 3, 4, kPrefill, 2, false},
      {"into decode's owed minimum", 8, 0, 4, 2, 0, kPrefill, 3, false},
      {"up to decode's owed minimum", 8, 0, 4, 2, 0, kPrefill, 2, true},
      {"own minimum always when the budget allows", 8, 2, 6, 0, 6, kPrefill, 2, true},
      {"multi-GPU replica over the reserve", 8, 2, 2, 2, 0, kPrefill, 4, true},
      {"multi-GPU replica into the reserve", 8, 2, 2, 3, 0, kPrefill, 4, false},
  };
  for (const AcquireCase& c : cases) {
    PoolBudget b = Budget(c.budget, c.prefill_min, c.decode_min);
    for (int i = 0; i < c.prefill_held; ++i)
      ASSERT_TRUE(b.Acquire(kPrefill, 1).has_value()) << c.name;
    for (int i = 0; i < c.decode_held; ++i)
      ASSERT_TRUE(b.Acquire(kDecode, 1).has_value()) << c.name;
    EXPECT_EQ(b.Acquire(c.pool, c.gpus).has_value(), c.granted) << c.name;
    EXPECT_LE(b.total_held(), c.budget) << c.name;
  }
}

TEST(PoolBudgetTest, ReleaseFreesRoomForTheOtherPool) {
  PoolBudget b = Budget(4, 1, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b.Acquire(kPrefill, 1).has_value());
  ASSERT_TRUE(b.Acquire(kDecode, 1).has_value());
  EXPECT_FALSE(b.Acquire(kDecode, 1).has_value());
  b.Release(kPrefill, 1);
  EXPECT_TRUE(b.Acquire(kDecode, 1).has_value());
  EXPECT_EQ(b.held(kPrefill), 2);
  EXPECT_EQ(b.held(kDecode), 2);
}

// A daemon restarted with a lower budget adopts what its replicas run on: counted, and
// nothing more is granted until the pools are back under the budget.
TEST(PoolBudgetTest, RestoredGpusCountEvenOverTheBudget) {
  PoolBudget b = Budget(4, 1, 1);
  b.Restore(kPrefill, 3);
  b.Restore(kDecode, 2);
  EXPECT_EQ(b.total_held(), 5);
  EXPECT_FALSE(b.Acquire(kDecode, 1).has_value());
  b.Release(kPrefill, 2);
  EXPECT_TRUE(b.Acquire(kDecode, 1).has_value());
  EXPECT_EQ(b.total_held(), 4);
}

}  // namespace
}  // namespace gpuscale::alloc
