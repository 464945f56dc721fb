#include "route/token_bucket.h"

#include <gtest/gtest.h>

namespace gpuscale::route {
namespace {

TEST(TokenBucketTest, StartsFullAndRefillsAtTheLimitPerMinute) {
  TokenBucket b(6000, 0);  // 100 tokens/s
  EXPECT_DOUBLE_EQ(b.Remaining(0), 6000);
  EXPECT_TRUE(b.TryTake(6000, 0));
  EXPECT_FALSE(b.TryTake(1, 0));
  EXPECT_DOUBLE_EQ(b.SecondsUntilFull(0), 60);
  EXPECT_DOUBLE_EQ(b.Remaining(2.5), 250);
  EXPECT_FALSE(b.TryTake(300, 2.5));  // all or nothing
  EXPECT_DOUBLE_EQ(b.Remaining(2.5), 250);
  EXPECT_TRUE(b.TryTake(250, 2.5));
  EXPECT_DOUBLE_EQ(b.Remaining(1000), 6000);  // never past the limit
  EXPECT_DOUBLE_EQ(b.SecondsUntilFull(1000), 0);
}

struct LimitCase {
  const char* name;
  double tokens;
  double now;
  bool allowed;
  double remaining;
  double reset_s;
  double retry_after_s;
};

TEST(TenantTokenLimitsTest, ChargesEachTenantItsOwnBucket) {
  TenantTokenLimits limits(600);  // 10 tokens/s
  for (const LimitCase& c : {
           LimitCase{"first request", 400, 0, true, 200, 40, 0},
           LimitCase{"over what is left", 300, 0, false, 200, 40, 10},
           LimitCase{"refilled 5 s later", 250, 5, true, 0, 60, 0},
           LimitCase{"larger than the limit: never", 601, 1000, false, 600, 0, 0},
       }) {
    const TokenLimitDecision d = limits.Take("a", c.tokens, c.now);
    EXPECT_EQ(d.allowed, c.allowed) << c.name;
    EXPECT_DOUBLE_EQ(d.limit_tokens, 600) << c.name;
    EXPECT_DOUBLE_EQ(d.remaining_tokens, c.remaining) << c.name;
    EXPECT_DOUBLE_EQ(d.reset_seconds, c.reset_s) << c.name;
    EXPECT_DOUBLE_EQ(d.retry_after_seconds, c.retry_after_s) << c.name;
  }
  // Another tenant has its own full bucket.
  EXPECT_TRUE(limits.Take("b", 600, 0).allowed);
}

TEST(TenantTokenLimitsTest, WithoutALimitEverythingPasses) {
  TenantTokenLimits limits(0);
  EXPECT_FALSE(limits.enabled());
  EXPECT_TRUE(limits.Take("a", 1e12, 0).allowed);
  EXPECT_EQ(limits.tenants(), 0u);
}

TEST(TenantTokenLimitsTest, ForgetsIdleTenantsPastItsBound) {
  TenantTokenLimits limits(60, /*max_tenants=*/2);
  ASSERT_TRUE(limits.Take("a", 60, 0).allowed);
  ASSERT_TRUE(limits.Take("b", 50, 0).allowed);
  // At 30 s neither bucket is full: c is added past the bound rather than forgetting a debt.
  ASSERT_TRUE(limits.Take("c", 1, 30).allowed);
  EXPECT_EQ(limits.tenants(), 3u);
  // At 100 s all are full again: the next new tenant drops them.
  ASSERT_TRUE(limits.Take("d", 1, 100).allowed);
  EXPECT_EQ(limits.tenants(), 1u);
}

TEST(OpenAiDurationTest, WritesGoDurations) {
  EXPECT_EQ(OpenAiDuration(0), "0s");
  EXPECT_EQ(OpenAiDuration(-1), "0s");
  EXPECT_EQ(OpenAiDuration(0.02), "20ms");
  EXPECT_EQ(OpenAiDuration(0.0001), "1ms");
  EXPECT_EQ(OpenAiDuration(1), "1s");
  EXPECT_EQ(OpenAiDuration(1.2), "2s");
  EXPECT_EQ(OpenAiDuration(360), "6m0s");
  EXPECT_EQ(OpenAiDuration(3723), "1h2m3s");
}

}  // namespace
}  // namespace gpuscale::route
