#include "profile/sim_probe.h"

#include <gtest/gtest.h>

#include <map>

#include "profile/capacity_profile.h"

namespace gpuscale::profile {
namespace {

// Llama-3-8B on one H100 as the shipped profile's config has it, the default SLO.
std::unique_ptr<sim::ReplicaModel> H100Model() {
  sim::ReplicaModelConfig config;
  config.gpu = "h100";
  config.max_batch_size = 256;
  config.max_batched_tokens = 8192;
  auto model = sim::MakeReplicaModel(config);
  EXPECT_TRUE(model.has_value());
  return std::move(*model);
}

// Short points: these tests compare capacities, they do not publish them.
constexpr SimProbeOptions kShort{20, 90, 1};

double Capacity(const sim::ReplicaModel& model, const Mix& mix) {
  SimReplicaProbe probe(model, sim::SloSpec{}, kShort);
  Result<MixProfile> result = BisectCapacity(probe, mix, 0.99, {});
  EXPECT_TRUE(result.has_value()) << result.error().ToString();
  return result ? result->capacity_rps : 0;
}

TEST(SimReplicaProbeTest, SamePointForTheSameInputs) {
  auto model = H100Model();
  SimReplicaProbe a(*model, sim::SloSpec{}, kShort);
  SimReplicaProbe b(*model, sim::SloSpec{}, kShort);
  Result<CurvePoint> first = a.Measure({1024, 256}, 12.5);
  Result<CurvePoint> second = b.Measure({1024, 256}, 12.5);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(*first, *second);
  EXPECT_GT(first->requests, 900);  // ~12.5 x 90 scored arrivals
  EXPECT_LT(first->requests, 1350);
  // Another seed: other arrivals.
  SimReplicaProbe c(*model, sim::SloSpec{}, {20, 90, 2});
  EXPECT_NE(c.Measure({1024, 256}, 12.5)->requests, first->requests);
}

TEST(SimReplicaProbeTest, LatenciesRiseWithTheRate) {
  auto model = H100Model();
  SimReplicaProbe probe(*model, sim::SloSpec{}, kShort);
  Result<CurvePoint> light = probe.Measure({1024, 256}, 2);
  Result<CurvePoint> heavy = probe.Measure({1024, 256}, 60);
  ASSERT_TRUE(light.has_value() && heavy.has_value());
  EXPECT_EQ(light->attainment, 1);
  EXPECT_LT(heavy->attainment, 0.5);
  EXPECT_LT(light->ttft_p99_seconds, heavy->ttft_p99_seconds);
  EXPECT_LT(light->tpot_p50_seconds, heavy->tpot_p50_seconds);
  EXPECT_LE(light->ttft_p50_seconds, light->ttft_p99_seconds);
}

TEST(SimReplicaProbeTest, CapacityFallsAsPromptsOrOutputsGrow) {
  auto model = H100Model();
  std::map<std::pair<int, int>, double> c;
  for (Mix mix : std::vector<Mix>{{256, 64}, {1024, 64}, {4096, 64}, {1024, 256}, {1024, 1024}}) {
    c[{mix.prompt_tokens, mix.output_tokens}] = Capacity(*model, mix);
  }
  auto cap = [&c](int prompt, int output) { return c.at({prompt, output}); };
  EXPECT_GT(cap(256, 64), cap(1024, 64));
  EXPECT_GT(cap(1024, 64), cap(4096, 64));
  EXPECT_GT(cap(1024, 64), cap(1024, 256));
  EXPECT_GT(cap(1024, 256), cap(1024, 1024));
  EXPECT_GT(cap(4096, 64), 0);
}

TEST(SimReplicaProbeTest, RefusesRatesThatAreNotPositiveOrTooLarge) {
  auto model = H100Model();
  SimReplicaProbe probe(*model, sim::SloSpec{}, kShort);
  EXPECT_FALSE(probe.Measure({1024, 256}, 0).has_value());
  EXPECT_FALSE(probe.Measure({1024, 256}, -1).has_value());
  EXPECT_FALSE(probe.Measure({0, 256}, 1).has_value());
  Result<CurvePoint> huge = probe.Measure({1024, 256}, 1e6);
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("simulated requests"), std::string::npos);
}

}  // namespace
}  // namespace gpuscale::profile
