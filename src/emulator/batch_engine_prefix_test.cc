// BatchEngine with prefix caching on (EngineConfig::prefix_block_tokens): hits skip prefill,
// vLLM's prefix-cache counters, and the KV events the cache's changes make.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "emulator/batch_engine.h"

namespace gpuscale::emulator {
namespace {

using kvevents::KvEventKind;

// A step costs 10 ms + 1 ms per sequence + 100 ms per 1000 prompt tokens prefilled in it;
// blocks of 10 tokens.
EngineConfig CachingConfig(int64_t kv_cache_tokens) {
  EngineConfig config;
  config.prefill_ms_per_1k_tokens = 100;
  config.decode_ms_base = 10;
  config.decode_ms_per_seq = 1;
  config.max_batch_size = 8;
  config.kv_cache_tokens = kv_cache_tokens;
  config.prefix_block_tokens = 10;
  return config;
}

std::vector<uint64_t> Keys(uint64_t first, int n) {
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  std::iota(keys.begin(), keys.end(), first);
  return keys;
}

double Ttft(BatchEngine& engine, int32_t prompt, std::vector<uint64_t> keys, double at) {
  auto id = engine.Submit(prompt, 1, Seconds{at}, false, false, std::move(keys));
  EXPECT_TRUE(id);
  engine.Advance(Seconds{at + 10});
  const RequestProgress* r = engine.Find(*id);
  EXPECT_NE(r, nullptr);
  return (*r->first_token_at - Seconds{at}).count();
}

TEST(BatchEnginePrefixTest, HitSkipsPrefillOfAllButTheLastToken) {
  BatchEngine engine(CachingConfig(100000));
  EXPECT_NEAR(Ttft(engine, 100, Keys(1, 10), 0), 0.021, 1e-9);  // 10 + 1 + 10 ms
  // The same prompt: 9 of its 10 blocks hit (the last token is computed again), so 10 tokens
  // are prefilled: 10 + 1 + 1 ms.
  EXPECT_NEAR(Ttft(engine, 100, Keys(1, 10), 1), 0.012, 1e-9);
  // A prompt sharing the first 5 blocks: 50 tokens to prefill.
  std::vector<uint64_t> shared = Keys(1, 5);
  for (uint64_t k : Keys(100, 5)) shared.push_back(k);
  EXPECT_NEAR(Ttft(engine, 100, shared, 2), 0.016, 1e-9);
  EXPECT_EQ(engine.stats().prefix_cache_queries_total, 300);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 140);
  EXPECT_EQ(engine.stats().prompt_tokens_total, 300);
}

TEST(BatchEnginePrefixTest, WithoutBlockSizeNothingHits) {
  EngineConfig config = CachingConfig(100000);
  config.prefix_block_tokens = 0;
  BatchEngine engine(config);
  EXPECT_NEAR(Ttft(engine, 100, Keys(1, 10), 0), 0.021, 1e-9);
  EXPECT_NEAR(Ttft(engine, 100, Keys(1, 10), 1), 0.021, 1e-9);
  EXPECT_EQ(engine.stats().prefix_cache_hits_total, 0);
  EXPECT_TRUE(engine.TakeKvEvents().empty());
}

TEST(BatchEnginePrefixTest, PublishesStoresAndEvictionsAsVllmEvents) {
  // 12 blocks; a request of 100 + 1 tokens leaves room for one free cached block beside it.
  BatchEngine engine(CachingConfig(120));
  (void)Ttft(engine, 100, Keys(1, 10), 0);
  auto events = engine.TakeKvEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, KvEventKind::kBlockStored);
  EXPECT_EQ(events[0].block_hashes, Keys(1, 10));
  EXPECT_FALSE(events[0].parent_block_hash);
  EXPECT_EQ(events[0].block_size, 10);
  (void)Ttft(engine, 100, Keys(1, 10), 1);  // a hit stores nothing new
  EXPECT_TRUE(engine.TakeKvEvents().empty());
  // Another prompt: its admission evicts all but one of the free blocks, tail first.
  (void)Ttft(engine, 100, Keys(50, 10), 2);
  events = engine.TakeKvEvents();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, KvEventKind::kBlockRemoved);
  EXPECT_EQ(events[0].block_hashes, (std::vector<uint64_t>{10, 9, 8, 7, 6, 5, 4, 3, 2}));
  EXPECT_EQ(events[1].kind, KvEventKind::kBlockStored);
  EXPECT_EQ(events[1].block_hashes, Keys(50, 10));
}

}  // namespace
}  // namespace gpuscale::emulator
