#include "daemon/memory_trim.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::daemon {
namespace {

TEST(MemoryTrimTest, RunsAtTheFirstCallThenOncePerInterval) {
  MemoryTrim trim;
  struct Case {
    double now;
    bool ran;
  };
  const std::vector<Case> cases = {
      {100, true},
      {100, false},
      {130, false},
      {159.9, false},
      {160, true},
      {161, false},
      // A clock stepped back past the last run (the daemon's clock is wall time) starts the
      // schedule again there instead of pausing trims until the old time comes round.
      {150, true},
      {151, false},
      {209, false},
      {210, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(trim.Run(Seconds(c.now)), c.ran) << "at " << c.now;
  }
}

}  // namespace
}  // namespace gpuscale::daemon
