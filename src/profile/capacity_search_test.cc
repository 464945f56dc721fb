#include "profile/capacity_search.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpuscale::profile {
namespace {

// A replica that meets the SLO for every request up to `capacity` req/s and for half of
// them above it; records the rates it was asked for.
class StepProbe : public LoadProbe {
 public:
  explicit StepProbe(double capacity) : capacity_(capacity) {}
  Result<CurvePoint> Measure(const Mix&, double rate) override {
    rates.push_back(rate);
    if (fail_at > 0 && rate >= fail_at) return Unavailable("endpoint went away", "--url");
    CurvePoint p;
    p.rate_rps = rate;
    p.requests = 100;
    p.attainment = rate <= capacity_ ? 1.0 : 0.5;
    return p;
  }
  std::vector<double> rates;
  double fail_at = 0;

 private:
  double capacity_;
};

constexpr Mix kMix{1024, 256};

TEST(BisectCapacityTest, FindsTheCapacityFromBelow) {
  StepProbe probe(17.3);
  BisectionOptions options;
  Result<MixProfile> result = BisectCapacity(probe, kMix, 0.99, options);
  ASSERT_TRUE(result.has_value()) << result.error().ToString();
  EXPECT_LE(result->capacity_rps, 17.3);
  EXPECT_GE(result->capacity_rps, 17.3 * (1 - std::ldexp(1.0, -options.steps)));
  EXPECT_EQ(result->mix, kMix);
  // The curve: one point per share of the capacity, by rate.
  ASSERT_EQ(result->curve.size(), options.curve_shares.size());
  for (size_t i = 0; i < result->curve.size(); ++i) {
    EXPECT_DOUBLE_EQ(result->curve[i].rate_rps, options.curve_shares[i] * result->capacity_rps);
  }
}

TEST(BisectCapacityTest, HalvesWhenTheStartRateIsTooHigh) {
  StepProbe probe(0.3);
  Result<MixProfile> result = BisectCapacity(probe, kMix, 0.99, {});
  ASSERT_TRUE(result.has_value()) << result.error().ToString();
  EXPECT_LE(result->capacity_rps, 0.3);
  EXPECT_GT(result->capacity_rps, 0.299);
}

TEST(BisectCapacityTest, GivesUpNamingTheMix) {
  StepProbe never_holds(0);
  Result<MixProfile> low = BisectCapacity(never_holds, kMix, 0.99, {});
  ASSERT_FALSE(low.has_value());
  EXPECT_EQ(low.error().field, "mix 1024:256");
  EXPECT_NE(low.error().message.find("no rate down to"), std::string::npos);
  StepProbe never_saturates(1e9);
  Result<MixProfile> high = BisectCapacity(never_saturates, kMix, 0.99, {});
  ASSERT_FALSE(high.has_value());
  EXPECT_NE(high.error().message.find("never saturates"), std::string::npos);
}

TEST(StepCapacityTest, StepsUpThenRefinesBetweenTheLastHoldAndTheFirstMiss) {
  StepProbe probe(10);
  Result<MixProfile> result = StepCapacity(probe, kMix, 0.99, {1, 2, 1000, 2});
  ASSERT_TRUE(result.has_value()) << result.error().ToString();
  // 1, 2, 4, 8 hold, 16 misses; then 12 misses and 10 holds.
  EXPECT_EQ(probe.rates, (std::vector<double>{1, 2, 4, 8, 16, 12, 10}));
  EXPECT_EQ(result->capacity_rps, 10);
  std::vector<double> curve_rates;
  for (const CurvePoint& p : result->curve) curve_rates.push_back(p.rate_rps);
  EXPECT_EQ(curve_rates, (std::vector<double>{1, 2, 4, 8, 10, 12, 16}));
}

TEST(StepCapacityTest, RefusesAFirstStepThatMissesAndAMaximumThatHolds) {
  StepProbe slow(0.5);
  Result<MixProfile> first = StepCapacity(slow, kMix, 0.99, {1, 1.5, 100, 0});
  ASSERT_FALSE(first.has_value());
  EXPECT_NE(first.error().message.find("first step already missed"), std::string::npos);
  StepProbe fast(1e6);
  Result<MixProfile> capped = StepCapacity(fast, kMix, 0.99, {1, 2, 50, 0});
  ASSERT_FALSE(capped.has_value());
  EXPECT_NE(capped.error().message.find("raise it"), std::string::npos);
  EXPECT_EQ(fast.rates.back(), 32);  // 64 > 50 is never run
}

TEST(StepCapacityTest, PassesTheProbesErrorOn) {
  StepProbe probe(10);
  probe.fail_at = 4;
  Result<MixProfile> result = StepCapacity(probe, kMix, 0.99, {1, 2, 1000, 2});
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(result.error().field, "--url");
}

}  // namespace
}  // namespace gpuscale::profile
