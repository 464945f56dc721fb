// SimReplica with its prefix cache: what a hit saves and what the vLLM counters read.
#include <gtest/gtest.h>

#include <vector>

#include "scale/metric_names.h"
#include "sim/metric_view.h"
#include "sim/prefix_cache.h"
#include "sim/sim_replica.h"
#include "testing/affine_model.h"

namespace gpuscale::sim {
namespace {

constexpr int32_t kBlock = 16;

// Runs the replica until idle from `now`; returns the time it went idle.
double Drain(SimReplica& replica) {
  double t = 0;
  while (replica.NextEventTime() < SimReplica::kNever) {
    t = replica.NextEventTime();
    replica.FinishSegment(t);
  }
  return t;
}

struct Fixture {
  AffineReplicaModel model;
  std::vector<std::vector<uint64_t>> keys;
  std::vector<RequestRecord> records;

  // A request of `input` tokens whose blocks hash to `hash_ids`.
  uint32_t Add(double arrival, int32_t input, std::vector<uint64_t> hash_ids) {
    keys.emplace_back();
    PrefixCache::ChainKeys(hash_ids, &keys.back());
    records.push_back(
        RequestRecord{.arrival_s = arrival, .input_tokens = input, .output_tokens = 2});
    return static_cast<uint32_t>(records.size() - 1);
  }
  void Bind() {
    for (size_t i = 0; i < records.size(); ++i) records[i].block_keys = keys[i];
  }
};

TEST(SimReplicaPrefixTest, HitSkipsPrefillOfCachedBlocks) {
  Fixture f;
  // 4 full blocks + 4 tokens; the second prompt shares the first three blocks.
  const uint32_t a = f.Add(0, 4 * kBlock + 4, {1, 2, 3, 4, 5});
  const uint32_t b = f.Add(10, 4 * kBlock + 4, {1, 2, 3, 9, 10});
  f.Bind();
  SimReplica replica(f.model, f.records, kBlock);
  replica.Enqueue(a, 0);
  EXPECT_EQ(replica.PendingPrefillTokens(), 4 * kBlock + 4);
  Drain(replica);
  EXPECT_EQ(f.records[a].cached_tokens, 0);
  EXPECT_EQ(replica.CachedPrefixTokens(f.records[b].block_keys, f.records[b].input_tokens),
            3 * kBlock);
  replica.Enqueue(b, 10);
  EXPECT_EQ(replica.PendingPrefillTokens(), kBlock + 4);  // admitted at once: hit known
  Drain(replica);
  EXPECT_EQ(f.records[b].cached_tokens, 3 * kBlock);
  EXPECT_EQ(replica.prefix_cache_queries(), 2 * (4 * kBlock + 4));
  EXPECT_EQ(replica.prefix_cache_hits(), 3 * kBlock);
  // The first token came after prefilling the 20 uncached tokens alone.
  EXPECT_NEAR(f.records[b].first_token_s - 10, f.model.PrefillSeconds(kBlock + 4), 1e-9);
  EXPECT_EQ(replica.PendingPrefillTokens(), 0);
}

// A prompt cached whole still computes its last token (vLLM): the hit stops one block short
// when the prompt is an exact number of blocks.
TEST(SimReplicaPrefixTest, AtLeastOneTokenIsComputed) {
  Fixture f;
  const uint32_t a = f.Add(0, 2 * kBlock, {1, 2});
  const uint32_t b = f.Add(10, 2 * kBlock, {1, 2});
  f.Bind();
  SimReplica replica(f.model, f.records, kBlock);
  replica.Enqueue(a, 0);
  Drain(replica);
  replica.Enqueue(b, 10);
  Drain(replica);
  EXPECT_EQ(f.records[b].cached_tokens, kBlock);
}

TEST(SimReplicaPrefixTest, OffWithoutBlockSizeOrKeys) {
  Fixture f;
  const uint32_t a = f.Add(0, 2 * kBlock + 1, {1, 2, 3});
  const uint32_t b = f.Add(10, 2 * kBlock + 1, {1, 2, 3});
  f.Bind();
  SimReplica off(f.model, f.records);
  off.Enqueue(a, 0);
  Drain(off);
  off.Enqueue(b, 10);
  Drain(off);
  EXPECT_EQ(f.records[b].cached_tokens, 0);
  EXPECT_EQ(off.prefix_cache_queries(), 0);
  EXPECT_EQ(off.prefix_cache_hits(), 0);
}

TEST(SimReplicaPrefixTest, RestartedReplicaStartsCold) {
  Fixture f;
  const uint32_t a = f.Add(0, 2 * kBlock + 1, {1, 2, 3});
  const uint32_t b = f.Add(10, 2 * kBlock + 1, {1, 2, 3});
  f.Bind();
  SimReplica replica(f.model, f.records, kBlock);
  replica.Enqueue(a, 0);
  Drain(replica);
  ASSERT_EQ(replica.CachedPrefixTokens(f.records[b].block_keys, f.records[b].input_tokens),
            2 * kBlock);
  replica.AbortAll();
  EXPECT_EQ(replica.CachedPrefixTokens(f.records[b].block_keys, f.records[b].input_tokens), 0);
}

// Free cached blocks give way to admitted requests: a cache of 8 blocks whose memory a large
// request reserves keeps none of the previous prompt.
TEST(SimReplicaPrefixTest, AdmissionsEvictFreeBlocks) {
  AffineCosts costs;
  costs.kv_cache_tokens = 8 * kBlock;
  AffineReplicaModel model(costs);
  Fixture f;
  const uint32_t a = f.Add(0, 2 * kBlock + 1, {1, 2, 3});
  const uint32_t big = f.Add(10, 7 * kBlock - 1, {7, 8, 9, 10, 11, 12, 13});
  const uint32_t again = f.Add(20, 2 * kBlock + 1, {1, 2, 3});
  f.Bind();
  SimReplica replica(model, f.records, kBlock);
  replica.Enqueue(a, 0);
  Drain(replica);
  replica.Enqueue(big, 10);
  Drain(replica);
  replica.Enqueue(again, 20);
  Drain(replica);
  EXPECT_EQ(f.records[again].cached_tokens, 0);
}

// The scrape exports the counters as vLLM's, and a tick reads their rates.
TEST(SimReplicaPrefixTest, ScrapeExportsQueryAndHitRates) {
  Fixture f;
  const uint32_t a = f.Add(0, 4 * kBlock + 4, {1, 2, 3, 4, 5});
  const uint32_t b = f.Add(10, 4 * kBlock + 4, {1, 2, 3, 9, 10});
  f.Bind();
  SimReplica replica(f.model, f.records, kBlock);
  MetricView view(SloSpec{});
  view.Scrape(Seconds{0}, 0, replica);
  replica.Enqueue(a, 0);
  Drain(replica);
  replica.Enqueue(b, 10);
  Drain(replica);
  view.Scrape(Seconds{20}, 0, replica);
  scale::ScalingInput input;
  view.Fill(Seconds{20}, {0}, input);
  namespace names = scale::metric_names;
  const auto queries = input.metrics.find(std::string(names::kPrefixCacheQueriesRate30s));
  const auto hits = input.metrics.find(std::string(names::kPrefixCacheHitsRate30s));
  ASSERT_NE(queries, input.metrics.end());
  ASSERT_NE(hits, input.metrics.end());
  ASSERT_TRUE(queries->second.service_value.has_value());
  ASSERT_TRUE(hits->second.service_value.has_value());
  EXPECT_NEAR(*queries->second.service_value, 2.0 * (4 * kBlock + 4) / 20, 1e-9);
  EXPECT_NEAR(*hits->second.service_value, 3.0 * kBlock / 20, 1e-9);
}

}  // namespace
}  // namespace gpuscale::sim
