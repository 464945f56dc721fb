// Pins the reason formatters to the text they had when they were built on fmt: FormatNumber
// has its own fast path for "{:.4g}" (bench/policy_tick_bench.cc), so it is compared with
// fmt itself over a sweep that includes rounding ties and powers of ten.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "scale/policy_util.h"

namespace gpuscale::scale {
namespace {

// fmt's text for FormatNumber, with its spelling of NaN and infinities.
std::string Reference(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", value);
}

// Stops at the first mismatch so that a broken fast path reports one value, not thousands.
void ExpectMatchesFmt(const std::vector<double>& values) {
  for (double v : values) {
    ASSERT_EQ(FormatNumber(v), Reference(v)) << fmt::format("value {:.17g}", v);
  }
}

TEST(PolicyUtilFormatTest, NumberMatchesFmtOnDecimalGrids) {
  std::vector<double> values;
  for (int k = -200000; k <= 200000; ++k) {
    values.push_back(k / 1000.0);
    values.push_back(k / 8.0);
    values.push_back(k / 3.0);
    values.push_back(k * 1e-7);
  }
  ExpectMatchesFmt(values);
}

TEST(PolicyUtilFormatTest, NumberMatchesFmtAtRoundingTiesAndPowersOfTen) {
  std::vector<double> values;
  // Values whose 5th significant digit is a 5: fmt rounds the exact binary value.
  for (int digits = 10000; digits < 100000; digits += 7) {
    for (int exponent = -9; exponent <= 0; ++exponent) {
      const double tie = (digits + 0.5) * std::pow(10.0, exponent);
      values.insert(values.end(), {tie, std::nextafter(tie, 0.0), std::nextafter(tie, 1e9)});
    }
  }
  for (int exponent = -8; exponent <= 8; ++exponent) {
    for (double mantissa : {1.0, 9.999, 9.9995, 9.99949, 9.99951}) {
      const double v = mantissa * std::pow(10.0, exponent);
      values.insert(values.end(), {v, -v, std::nextafter(v, 0.0), std::nextafter(v, 1e300)});
    }
  }
  ExpectMatchesFmt(values);
}

TEST(PolicyUtilFormatTest, NumberMatchesFmtOutsideTheFastRange) {
  ExpectMatchesFmt({0.0, -0.0, 1e4, 12345.0, -99999.5, 1e-5, 0.00009999, 1e300,
                    std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
                    std::numeric_limits<double>::quiet_NaN(),
                    std::numeric_limits<double>::infinity(),
                    -std::numeric_limits<double>::infinity()});
}

TEST(PolicyUtilFormatTest, StrAppendWritesEachPartAsItsFormatter) {
  std::string out = "reason: ";
  StrAppend(out, "rule '", std::string("q"), "' ", 42, ' ', -7LL, ' ', Num{1.0 / 3}, ' ',
            CapabilitySet{"nvlink", "gpu"}, ' ', CapabilitySet{});
  EXPECT_EQ(out, "reason: rule 'q' 42 -7 0.3333 {gpu, nvlink} {}");
}

TEST(PolicyUtilFormatTest, AppendFormsMatchReturningForms) {
  std::string out;
  AppendCountOf(out, 1, "task");
  EXPECT_EQ(out, CountOf(1, "task"));
  out.clear();
  AppendGroupChange(out, 3, 3, true);
  EXPECT_EQ(out, "rebalance at 3");
  EXPECT_EQ(FormatGroupChange(3, 3, false), "hold at 3");
  EXPECT_EQ(FormatGroupChange(3, 5, true), "scale out 3 -> 5");
  EXPECT_EQ(FormatCapabilities({"a", "b"}), "{a, b}");
}

}  // namespace
}  // namespace gpuscale::scale
