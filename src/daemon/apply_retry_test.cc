#include "daemon/apply_retry.h"

#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

TEST(ApplyRetryTest, WaitsOneIntervalThenDoublesUpToTheCap) {
  ApplyRetry retry;
  const Seconds interval{5}, cap{60};
  Seconds now{100};
  const double expected_delays[] = {5, 10, 20, 40, 60, 60};
  for (double delay : expected_delays) {
    retry.Failed("engine down", now, interval, cap);
    EXPECT_FALSE(retry.Due(now + Seconds{delay} - Seconds{0.001})) << "delay " << delay;
    EXPECT_TRUE(retry.Due(now + Seconds{delay})) << "delay " << delay;
    now = retry.next_try();
  }
  EXPECT_EQ(retry.failures(), 6);
}

TEST(ApplyRetryTest, ReportsOnlyANewMessage) {
  ApplyRetry retry;
  EXPECT_TRUE(retry.Failed("token file missing", Seconds{0}, Seconds{1}, Seconds{60}));
  EXPECT_FALSE(retry.Failed("token file missing", Seconds{1}, Seconds{1}, Seconds{60}));
  EXPECT_TRUE(retry.Failed("token file empty", Seconds{3}, Seconds{1}, Seconds{60}));
  EXPECT_EQ(retry.message(), "token file empty");
}

}  // namespace
}  // namespace gpuscale::daemon
