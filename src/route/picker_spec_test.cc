#include "route/picker_spec.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace gpuscale::route {
namespace {

TEST(PickerKindTest, EveryKindParsesFromItsName) {
  for (PickerKind kind :
       {PickerKind::kLeastOutstanding, PickerKind::kRoundRobin, PickerKind::kPrefixCache}) {
    auto parsed = ParsePickerKind(PickerKindName(kind));
    ASSERT_TRUE(parsed) << PickerKindName(kind);
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(PickerKindNames(), "least_outstanding, round_robin, prefix_cache");
}

TEST(PickerKindTest, UnknownNameNamesTheKindField) {
  auto parsed = ParsePickerKind("Least_Outstanding");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().ToString(),
            "kind: expected one of least_outstanding, round_robin, prefix_cache, got "
            "'Least_Outstanding'");
}

TEST(PrefixIndexModeTest, NamesRoundTripAndUnknownNamesTheField) {
  for (PrefixIndexMode mode : {PrefixIndexMode::kApproximate, PrefixIndexMode::kPrecise}) {
    auto parsed = ParsePrefixIndexMode(PrefixIndexModeName(mode));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, mode);
  }
  auto bad = ParsePrefixIndexMode("exact");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(), "prefix_index: expected approximate or precise, got 'exact'");
}

TEST(CheckPickerSpecTest, DefaultsAndEveryKnobWithinRangePass) {
  EXPECT_TRUE(CheckPickerSpec(
      {.kind = PickerKind::kPrefixCache, .prefix_index = PrefixIndexMode::kPrecise}));
  EXPECT_TRUE(CheckPickerSpec({}));
  EXPECT_TRUE(CheckPickerSpec(
      {.slow_start_seconds = 30, .prefix_affinity = true, .affinity_load_factor = 100}));
  EXPECT_TRUE(CheckPickerSpec({.kind = PickerKind::kRoundRobin}));
}

struct BadSpecCase {
  PickerSpec spec;
  const char* error;  // Error::ToString()
};

class CheckPickerSpecRejectsTest : public ::testing::TestWithParam<BadSpecCase> {};

TEST_P(CheckPickerSpecRejectsTest, NamesTheField) {
  Status status = CheckPickerSpec(GetParam().spec);
  ASSERT_FALSE(status) << GetParam().error;
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.error().ToString(), GetParam().error);
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckPickerSpecRejectsTest,
    ::testing::Values(
        BadSpecCase{{.slow_start_seconds = -1},
                    "slow_start_seconds: expected a finite number of seconds >= 0, got -1"},
        BadSpecCase{{.slow_start_seconds = kInf},
                    "slow_start_seconds: expected a finite number of seconds >= 0, got inf"},
        BadSpecCase{{.slow_start_seconds = kNan},
                    "slow_start_seconds: expected a finite number of seconds >= 0, got nan"},
        BadSpecCase{{.kind = PickerKind::kRoundRobin, .slow_start_seconds = 5},
                    "slow_start_seconds: applies to least_outstanding only"},
        BadSpecCase{{.kind = PickerKind::kRoundRobin, .prefix_affinity = true},
                    "prefix_affinity: applies to least_outstanding only"},
        BadSpecCase{{.kind = PickerKind::kPrefixCache, .slow_start_seconds = 5},
                    "slow_start_seconds: applies to least_outstanding only"},
        BadSpecCase{{.prefix_index = PrefixIndexMode::kPrecise},
                    "prefix_index: applies to prefix_cache only"},
        BadSpecCase{{.affinity_load_factor = 1},
                    "affinity_load_factor: expected a factor in (1, 100], got 1"},
        BadSpecCase{{.affinity_load_factor = 100.5},
                    "affinity_load_factor: expected a factor in (1, 100], got 100.5"},
        BadSpecCase{{.affinity_load_factor = kNan},
                    "affinity_load_factor: expected a factor in (1, 100], got nan"}));

}  // namespace
}  // namespace gpuscale::route
