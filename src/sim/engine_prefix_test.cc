// The engine with block hashes: routing decides how much of the replicas' prefix caches hit.
#include <gtest/gtest.h>

#include "sim/simulation.h"
#include "testing/fake_orchestrator.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::sim {
namespace {

using testing::AffineReplicaModel;
using testing::ScriptedPolicy;

constexpr int kTenants = 40;
constexpr int32_t kEngineBlock = 16;

// 400 requests from 40 tenants in turn, each a 6-block system prompt of its tenant, 2 blocks
// of its own and 5 tokens: at most 96 of 133 prompt tokens can hit, and only after the
// tenant's first request.
Trace SharedPrefixTrace() {
  Trace t;
  t.hash_block_tokens = kEngineBlock;
  for (int i = 0; i < 400; ++i) {
    TraceRequest r{i * 0.05, 8 * kEngineBlock + 5, 20};
    r.hash_begin = static_cast<uint32_t>(t.hash_ids.size());
    const int tenant = (i * 7) % kTenants;
    for (uint64_t b = 0; b < 6; ++b) t.hash_ids.push_back(1000 * (tenant + 1) + b);
    for (uint64_t b = 0; b < 3; ++b) t.hash_ids.push_back(1'000'000 + 3 * i + b);
    r.hash_count = 9;
    t.requests.push_back(r);
  }
  return t;
}

double HitRatio(route::PickerSpec router) {
  AffineReplicaModel model;
  SimulationConfig c;
  c.cluster = {1, 8, "H100", 81559};
  c.service.min_replicas = 4;
  c.service.max_replicas = 4;
  c.router = router;
  auto policy = std::make_unique<ScriptedPolicy>(4, 4);
  policy->desired = 4;
  auto result = RunSimulation(c, model, std::move(policy), SharedPrefixTrace());
  EXPECT_TRUE(result) << result.error().ToString();
  if (!result) return -1;
  EXPECT_EQ(result->report.completed, 400);
  EXPECT_EQ(result->report.prompt_tokens, 400 * 133);
  return result->report.prefix_hit_ratio;
}

TEST(EnginePrefixTest, CacheAwareRoutingHitsWhatOneReplicaWould) {
  const double bound = 360.0 * 96 / (400 * 133);  // all but each tenant's first request
  const double spread = HitRatio({});
  const double precise = HitRatio(
      {.kind = route::PickerKind::kPrefixCache, .prefix_index = route::PrefixIndexMode::kPrecise});
  const double approximate = HitRatio({.kind = route::PickerKind::kPrefixCache});
  const double affinity = HitRatio({.prefix_affinity = true});
  EXPECT_GT(spread, 0);  // a tenant's prompts meet on one replica now and then
  EXPECT_LT(spread, 0.8 * bound);
  EXPECT_NEAR(precise, bound, 0.02);
  EXPECT_NEAR(approximate, bound, 0.02);
  // Affinity's bounded load spills a tenant's requests to the next replica now and then.
  EXPECT_GT(affinity, 0.85 * bound);
  EXPECT_LT(affinity, bound + 1e-9);
}

TEST(EnginePrefixTest, TraceWithoutHashesHitsNothing) {
  Trace t = SharedPrefixTrace();
  t.hash_ids.clear();
  t.hash_block_tokens = 0;
  for (TraceRequest& r : t.requests) r.hash_count = r.hash_begin = 0;
  AffineReplicaModel model;
  SimulationConfig c;
  c.cluster = {1, 8, "H100", 81559};
  c.service.min_replicas = 2;
  c.service.max_replicas = 2;
  c.router = {.kind = route::PickerKind::kPrefixCache};
  auto policy = std::make_unique<ScriptedPolicy>(2, 2);
  policy->desired = 2;
  auto result = RunSimulation(c, model, std::move(policy), t);
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->report.completed, 400);
  EXPECT_EQ(result->report.prefix_cache_hit_tokens, 0);
}

}  // namespace
}  // namespace gpuscale::sim
