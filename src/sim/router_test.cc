#include "sim/router.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpuscale::sim {
namespace {

constexpr double kWarm = -std::numeric_limits<double>::infinity();

TEST(RouterLoadTest, WithoutSlowStartItIsTheOutstandingCount) {
  EXPECT_EQ(RouterLoad(0, 100, 100, 0), 0);
  EXPECT_EQ(RouterLoad(37, kWarm, 100, 0), 37);
}

struct SlowStartCase {
  int outstanding;
  double age_s;  // since the cold start ended
  double expected;
};

TEST(RouterLoadTest, SlowStartDividesByAWeightRampingFromATenthToOne) {
  const double window = 20, now = 1000;
  for (const SlowStartCase& c : {
           SlowStartCase{0, 0, 10},   // weight 0.1 at once: worth 1 / 0.1
           SlowStartCase{4, 1, 50},   // 1 / 20 of the window is under the floor
           SlowStartCase{4, 5, 20},   // a quarter of the way: weight 0.25
           SlowStartCase{9, 10, 20},  // half-way
           SlowStartCase{9, 20, 10},  // the window is over: outstanding + 1
           SlowStartCase{9, 500, 10},
       }) {
    EXPECT_DOUBLE_EQ(RouterLoad(c.outstanding, now - c.age_s, now, window), c.expected)
        << c.outstanding << " requests, " << c.age_s << " s old";
  }
  // Initial replicas were warm before the trace: full weight from t = 0.
  EXPECT_DOUBLE_EQ(RouterLoad(9, kWarm, 0, window), 10);
}

TEST(RouterLoadTest, AFreshReplicaTakesATenthOfAWarmOnesShareAtFirst) {
  // A warm replica holding 80 requests against one just ready: the fresh one is chosen
  // while (n + 1) / 0.1 < 81, i.e. for its first 8 requests, not for the next 80.
  int fresh = 0;
  while (RouterLoad(fresh, 100, 100, 20) < RouterLoad(80, kWarm, 100, 20)) ++fresh;
  EXPECT_EQ(fresh, 8);
}

}  // namespace
}  // namespace gpuscale::sim
