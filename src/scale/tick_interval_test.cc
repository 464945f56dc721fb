#include "scale/tick_interval.h"

#include <gtest/gtest.h>

namespace gpuscale::scale {
namespace {

TEST(TickIntervalTest, TheLoopIntervalShortensWhileRequestsWaitOrAReplicaSettles) {
  const Seconds loop{15}, probe{2};
  EXPECT_EQ(TickInterval(loop, false, false, probe), loop);
  EXPECT_EQ(TickInterval(loop, true, false, probe), kWaitingTickInterval);
  EXPECT_EQ(TickInterval(loop, false, true, probe), probe);
  EXPECT_EQ(TickInterval(loop, true, true, probe), kWaitingTickInterval);  // the shorter
  // Never longer than the loop's own interval.
  EXPECT_EQ(TickInterval(Seconds{0.5}, true, true, probe), Seconds{0.5});
}

}  // namespace
}  // namespace gpuscale::scale
