#include "profile/capacity_profile.h"

#include <gtest/gtest.h>

namespace gpuscale::profile {
namespace {

// Mixes whose capacities follow 1 / rps = (prompt + w x output) / C exactly.
std::vector<MixProfile> Exact(double w, double c, const std::vector<Mix>& mixes) {
  std::vector<MixProfile> out;
  for (const Mix& m : mixes) {
    MixProfile p;
    p.mix = m;
    p.capacity_rps = c / (m.prompt_tokens + w * m.output_tokens);
    out.push_back(p);
  }
  return out;
}

TEST(FitCapacityTest, RecoversWeightAndCapacityFromExactNumbers) {
  for (const auto& [w, c] : {std::pair{4.0, 36000.0}, {0.5, 12000.0}, {11.25, 90000.0}}) {
    Result<CapacityFit> fit = FitCapacity(Exact(w, c, DefaultMixes()));
    ASSERT_TRUE(fit.has_value()) << fit.error().ToString();
    EXPECT_NEAR(fit->output_token_weight, w, 1e-9 * w);
    EXPECT_NEAR(fit->capacity_tokens_per_second, c, 1e-9 * c);
    EXPECT_LT(fit->max_error_ratio, 1e-12);
    EXPECT_FALSE(fit->weight_clamped);
  }
}

TEST(FitCapacityTest, TwoMixesOfDifferentRatiosAreEnough) {
  Result<CapacityFit> fit = FitCapacity(Exact(3, 20000, {{1000, 100}, {100, 1000}}));
  ASSERT_TRUE(fit.has_value()) << fit.error().ToString();
  EXPECT_NEAR(fit->output_token_weight, 3, 1e-9);
  EXPECT_NEAR(fit->capacity_tokens_per_second, 20000, 1e-6);
}

TEST(FitCapacityTest, NoisyCapacitiesGiveTheLeastRelativeError) {
  std::vector<MixProfile> mixes = Exact(4, 36000, DefaultMixes());
  mixes[0].capacity_rps *= 1.05;  // one mix 5 % faster than the model says
  Result<CapacityFit> fit = FitCapacity(mixes);
  ASSERT_TRUE(fit.has_value());
  EXPECT_GT(fit->max_error_ratio, 0.005);
  EXPECT_LT(fit->max_error_ratio, 0.05);  // spread over the others, not all on one mix
  EXPECT_NEAR(fit->output_token_weight, 4, 0.5);
}

TEST(FitCapacityTest, ClampsANegativeWeightToZero) {
  // Longer outputs make requests cheaper: only noise can say that; w is held at 0.
  Result<CapacityFit> fit = FitCapacity(Exact(-0.2, 10000, {{1000, 100}, {1000, 1000}}));
  ASSERT_TRUE(fit.has_value()) << fit.error().ToString();
  EXPECT_TRUE(fit->weight_clamped);
  EXPECT_EQ(fit->output_token_weight, 0);
  EXPECT_GT(fit->capacity_tokens_per_second, 0);
}

TEST(FitCapacityTest, RefusesWhatCannotBeFitted) {
  struct Case {
    const char* name;
    std::vector<MixProfile> mixes;
    std::string field;
    std::string message;
  };
  std::vector<MixProfile> zero = Exact(4, 36000, {{256, 64}, {512, 1024}});
  zero[1].capacity_rps = 0;
  const Case cases[] = {
      {"none", {}, "mixes", "no mix"},
      {"one mix", Exact(4, 36000, {{1024, 256}}), "mixes", "one mix given"},
      {"one ratio", Exact(4, 36000, {{256, 64}, {1024, 256}}), "mixes", "one prompt:output ratio"},
      {"zero capacity", zero, "mixes[1]", "positive capacity"},
  };
  for (const Case& c : cases) {
    Result<CapacityFit> fit = FitCapacity(c.mixes);
    ASSERT_FALSE(fit.has_value()) << c.name;
    EXPECT_EQ(fit.error().field, c.field) << c.name;
    EXPECT_NE(fit.error().message.find(c.message), std::string::npos)
        << c.name << ": " << fit.error().message;
  }
}

TEST(ApplyFitTest, StoresTheFitAndEachMixInWorkUnits) {
  CapacityProfile p;
  p.mixes = Exact(4, 36000, DefaultMixes());
  ASSERT_TRUE(ApplyFit(p).has_value());
  EXPECT_NEAR(p.output_token_weight, 4, 1e-9);
  EXPECT_NEAR(p.capacity_tokens_per_second, 36000, 1e-6);
  for (const MixProfile& m : p.mixes) EXPECT_NEAR(m.capacity_tokens_per_second, 36000, 1e-6);
}

TEST(RoundedForOutputTest, RoundsMeasurementsToSignificantDigits) {
  CapacityProfile p;
  p.mixes = Exact(4, 36000, DefaultMixes());
  p.mixes[0].curve.push_back({94.86562500000001, 100, 0.99123456, 0.017888326994295767, 2, 0, 0});
  ASSERT_TRUE(ApplyFit(p).has_value());
  const CapacityProfile r = RoundedForOutput(p);
  EXPECT_EQ(r.mixes[0].curve[0].rate_rps, 94.8656);
  EXPECT_EQ(r.mixes[0].curve[0].attainment, 0.991235);
  EXPECT_EQ(r.mixes[0].curve[0].ttft_p50_seconds, 0.0178883);
  EXPECT_EQ(r.mixes[0].curve[0].ttft_p99_seconds, 2);
  EXPECT_EQ(r.mixes[0].curve[0].requests, 100);
  EXPECT_NEAR(r.capacity_tokens_per_second, 36000, 0.1);
  EXPECT_EQ(RoundedForOutput(r), r);  // rounding again changes nothing
}

TEST(CheckFittableTest, NamesTheFieldItWasGiven) {
  Status one = CheckFittable({{1024, 256}}, "--mix");
  ASSERT_FALSE(one.has_value());
  EXPECT_EQ(one.error().field, "--mix");
  EXPECT_TRUE(CheckFittable({{1024, 256}, {1024, 512}}, "--mix").has_value());
}

}  // namespace
}  // namespace gpuscale::profile
