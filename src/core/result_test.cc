#include "core/result.h"

#include <gtest/gtest.h>

#include "core/clock.h"

namespace gpuscale {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return InvalidArgument("must be > 0", "replicas");
  return v;
}

Result<int> Doubled(int v) {
  GS_ASSIGN_OR_RETURN(int x, ParsePositive(v));
  return 2 * x;
}

Status Check(int v) {
  GS_RETURN_IF_ERROR(ParsePositive(v));
  return OkStatus();
}

TEST(ResultTest, AssignOrReturnPropagatesErrorWithField) {
  EXPECT_EQ(*Doubled(3), 6);
  auto bad = Doubled(-1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().ToString(), "replicas: must be > 0");
}

TEST(ResultTest, ReturnIfErrorOnStatus) {
  EXPECT_TRUE(Check(1));
  EXPECT_EQ(Check(0).error().field, "replicas");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kResourceExhausted), "resource_exhausted");
}

TEST(ClockTest, ManualClockAdvancesAndFormats) {
  ManualClock clock(Seconds{10});
  clock.Advance(Seconds{2.5});
  EXPECT_DOUBLE_EQ(clock.Now().count(), 12.5);
  EXPECT_EQ(FormatRfc3339(Seconds{0.25}), "1970-01-01T00:00:00.250Z");
}

}  // namespace
}  // namespace gpuscale
