#include "route/admission_config.h"

#include <gtest/gtest.h>

namespace gpuscale::route {
namespace {

struct SlotCase {
  int limit;
  int reserved;
  Priority priority;
  int slots;
};

// The slots a replica may fill before a request of each priority waits at the door.
TEST(SlotLimitTest, ReservesTheLastSlotsOfEachReplicaForCriticalRequests) {
  const SlotCase cases[] = {
      // No limit: no reserve either, whatever it says.
      {0, 0, Priority::kCritical, 0},
      {0, 0, Priority::kSheddable, 0},
      {0, 4, Priority::kStandard, 0},
      // A limit without a reserve: the same for every priority (the door before the knob).
      {64, 0, Priority::kCritical, 64},
      {64, 0, Priority::kStandard, 64},
      {64, 0, Priority::kSheddable, 64},
      // A reserve: critical may fill every slot, the others all but the reserved ones.
      {64, 8, Priority::kCritical, 64},
      {64, 8, Priority::kStandard, 56},
      {64, 8, Priority::kSheddable, 56},
      {2, 1, Priority::kStandard, 1},
      // A reserve the parser refuses (not below the limit) still leaves the others a slot:
      // 0 would read as no limit at all.
      {4, 4, Priority::kStandard, 1},
      {4, 9, Priority::kSheddable, 1},
      {4, 9, Priority::kCritical, 4},
  };
  for (const SlotCase& c : cases) {
    AdmissionConfig config;
    config.max_in_flight_per_replica = c.limit;
    config.critical_reserved_per_replica = c.reserved;
    EXPECT_EQ(SlotLimit(config, c.priority), c.slots)
        << "limit " << c.limit << ", reserved " << c.reserved << ", " << PriorityName(c.priority);
  }
}

}  // namespace
}  // namespace gpuscale::route
