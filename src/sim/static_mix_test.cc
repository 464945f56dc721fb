#include "sim/static_mix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/oracle.h"
#include "testing/bursty_trace.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::sim {
namespace {

using testing::AffineCosts;
using testing::AffineReplicaModel;
using testing::BurstyTrace;

// The capacity of `counts` at these per-replica capacities meets `need`: monotone, as a
// replayed attainment is.
auto CapacityAtLeast(std::vector<double> capacities, double need) {
  return [capacities, need](const std::vector<int>& counts) {
    double sum = 0;
    for (size_t i = 0; i < counts.size(); ++i) sum += counts[i] * capacities[i];
    return sum >= need - 1e-9;
  };
}

// Every count vector with at most two offers non-zero, exhaustively: the search must find
// the cheapest of them.
double BruteForceCheapest(const std::vector<double>& capacities, const std::vector<double>& prices,
                          int max_each, double need) {
  double best = 1e300;
  const size_t n = prices.size();
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i; j < n; ++j) {
      for (int a = 0; a <= max_each; ++a) {
        for (int b = 0; b <= (i == j ? 0 : max_each); ++b) {
          if (a * capacities[i] + b * capacities[j] >= need - 1e-9) {
            best = std::min(best, a * prices[i] + b * prices[j]);
          }
        }
      }
    }
  }
  return best;
}

// H100 x4 and A100 x4 as sim-variants measures them: 2.45x the capacity at 2.40x the price.
// A need of 2.2 H100s buys 3 of them ($7.20) or 6 A100s ($6.00) alone, and 1 + 3 mixed
// ($5.40): the whole-replica remainder is where a mix pays.
TEST(CheapestMixTest, TopsUpTheCheaperTypeWithASmallerReplica) {
  const auto mix = CheapestMix({2.4, 1.0}, {16, 16}, 32, CapacityAtLeast({1.0, 1 / 2.45}, 2.2));
  ASSERT_TRUE(mix);
  EXPECT_EQ(mix->replicas, (std::vector<int>{1, 3}));
  EXPECT_NEAR(mix->price, 5.4, 1e-9);
}

TEST(CheapestMixTest, FindsTheCheapestOfEveryMixOfAtMostTwoOffers) {
  const std::vector<double> capacities = {1.0, 1 / 2.45, 0.7};
  const std::vector<double> prices = {2.4, 1.0, 1.75};
  for (double need : {0.3, 1.0, 1.2, 2.2, 3.5, 5.1, 7.9, 11.3}) {
    const auto mix = CheapestMix(prices, {16, 16, 16}, 48, CapacityAtLeast(capacities, need));
    ASSERT_TRUE(mix) << need;
    EXPECT_NEAR(mix->price, BruteForceCheapest(capacities, prices, 16, need), 1e-9) << need;
  }
}

TEST(CheapestMixTest, RespectsTheLimitsAndSaysWhenNothingMeets) {
  // The cheap type is capped at 2: the rest comes from the other one.
  const auto capped = CheapestMix({1.0, 2.4}, {2, 16}, 32, CapacityAtLeast({1.0, 1.0}, 4));
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->replicas, (std::vector<int>{2, 2}));
  EXPECT_FALSE(CheapestMix({1.0, 2.4}, {2, 2}, 32, CapacityAtLeast({1.0, 1.0}, 5)));
  EXPECT_FALSE(CheapestMix({1.0, 2.4}, {16, 16}, 3, CapacityAtLeast({1.0, 1.0}, 4)));
}

// One shape at capacity 1 each routes as the static fleet's replay: the same attainment.
TEST(MixedFleetAttainmentTest, EqualsTheStaticFleetsReplayForOneShape) {
  AffineReplicaModel model;
  const Trace trace = BurstyTrace(300);
  SloSpec slo;
  for (int n : {1, 2, 3}) {
    const std::vector<MixedReplica> fleet(static_cast<size_t>(n), MixedReplica{&model, 1});
    EXPECT_NEAR(
        MixedFleetAttainment(fleet, trace.requests, route::PickerKind::kLeastOutstanding, slo),
        FleetAttainment(model, trace.requests, n, route::PickerKind::kLeastOutstanding, slo), 1e-12)
        << n;
  }
}

// One request at a time, on a fleet listing a slow replica (a third of the capacity, TPOT
// 21 ms against a 15 ms target) before a fast one (7 ms): by count both are idle and the
// first, the slow one, takes every request; by capacity the fast one does.
TEST(MixedFleetAttainmentTest, WeightsTheFasterReplicaByItsCapacity) {
  AffineReplicaModel fast;
  AffineCosts slow_costs;
  slow_costs.decode_base_s *= 3;
  AffineReplicaModel slow(slow_costs);
  Trace trace;
  for (int i = 0; i < 20; ++i) trace.requests.push_back({10.0 * i, 200, 50});
  SloSpec slo;
  slo.tpot_seconds = 0.015;
  const auto leg = route::PickerKind::kLeastOutstanding;
  EXPECT_DOUBLE_EQ(MixedFleetAttainment({{&slow, 1}, {&fast, 1}}, trace.requests, leg, slo), 0);
  EXPECT_DOUBLE_EQ(MixedFleetAttainment({{&slow, 1.0 / 3}, {&fast, 1}}, trace.requests, leg, slo),
                   1);
}

// End to end on two affine variants: each alone is bisected, and the cheapest fleet found
// meets the target and costs no more than either alone.
TEST(CheapestStaticMixTest, IsNoDearerThanEitherTypeAloneAndMeetsTheTarget) {
  AffineReplicaModel fast;
  AffineCosts slow_costs;
  slow_costs.decode_base_s *= 2;
  slow_costs.prefill_per_token_s *= 2;
  AffineReplicaModel slow(slow_costs);
  SimulationConfig config;
  config.service.max_replicas = 16;
  config.cluster = {2, 8, "H100", 81559};
  std::vector<VariantRuntime> variants(2);
  variants[0].spec.name = "fast";
  variants[0].spec.price_per_gpu_hour = 2.4;
  variants[0].model = &fast;
  variants[1].spec.name = "slow";
  variants[1].spec.gpu_type = "a100";
  variants[1].spec.price_per_gpu_hour = 1.0;
  variants[1].model = &slow;
  variants[1].capacity = 0.5;
  const Trace trace = BurstyTrace(120);
  const auto mix = CheapestStaticMix(config, variants, trace, 3600);
  ASSERT_TRUE(mix) << mix.error().ToString();
  ASSERT_TRUE(mix->single[0] && mix->single[1] && mix->cheapest);
  EXPECT_LE(mix->cheapest->cost, std::min(mix->single[0]->cost, mix->single[1]->cost));
  EXPECT_GE(mix->cheapest->attainment, config.slo.target_ratio);
  const auto& n = mix->cheapest->replicas;
  std::vector<MixedReplica> fleet;
  for (int i = 0; i < n[0]; ++i) fleet.push_back({&fast, 1});
  for (int i = 0; i < n[1]; ++i) fleet.push_back({&slow, 0.5});
  EXPECT_DOUBLE_EQ(mix->cheapest->attainment,
                   MixedFleetAttainment(fleet, trace.requests, config.router.kind, config.slo));
  // One GPU per replica for an hour at the listed prices.
  EXPECT_NEAR(mix->cheapest->cost, n[0] * 2.4 + n[1] * 1.0, 1e-9);
}

}  // namespace
}  // namespace gpuscale::sim
