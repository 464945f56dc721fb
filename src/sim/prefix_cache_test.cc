#include "sim/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::sim {
namespace {

std::vector<uint64_t> Keys(std::vector<uint64_t> hash_ids) {
  std::vector<uint64_t> keys;
  PrefixCache::ChainKeys(hash_ids, &keys);
  return keys;
}

// Admits a request the way SimReplica does: hits first, then stores the rest.
int64_t Admit(PrefixCache& cache, const std::vector<uint64_t>& keys) {
  const int64_t hits = cache.Acquire(keys, static_cast<int64_t>(keys.size()));
  return cache.Store(keys, hits);
}

TEST(PrefixCacheTest, ChainKeyNamesTheWholePrefix) {
  const std::vector<uint64_t> a = Keys({0, 1, 2});
  const std::vector<uint64_t> b = Keys({5, 1, 2});
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a, Keys({0, 1, 2}));
  // The same block hashes under another first block are other blocks.
  EXPECT_NE(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);
}

TEST(PrefixCacheTest, HitsTheLeadingRunOnly) {
  PrefixCache cache(100);
  const std::vector<uint64_t> first = Keys({0, 1, 2, 3});
  ASSERT_EQ(Admit(cache, first), 4);
  cache.Release(first);
  EXPECT_EQ(cache.Match(Keys({0, 1, 2, 3, 4})), 4);
  EXPECT_EQ(cache.Match(Keys({0, 1, 9, 3})), 2);       // diverges at the third block
  EXPECT_EQ(cache.Match(Keys({7, 1, 2, 3})), 0);       // no match from the start: no hit
  EXPECT_EQ(cache.Acquire(Keys({0, 1, 2, 3}), 2), 2);  // capped by the caller
}

// The caller only passes full blocks; a prompt one token into its next block adds nothing.
TEST(PrefixCacheTest, PartialBlockIsNotCached) {
  PrefixCache cache(100);
  const std::vector<uint64_t> keys = Keys({0, 1, 2});
  const std::span<const uint64_t> full(keys.data(), 2);  // third block partial
  ASSERT_EQ(cache.Store(full, 0), 2);
  cache.Release(full);
  EXPECT_EQ(cache.blocks(), 2);
  EXPECT_EQ(cache.Match(keys), 2);
}

TEST(PrefixCacheTest, EvictsLeastRecentlyReleasedTailFirst) {
  PrefixCache cache(4);
  const std::vector<uint64_t> a = Keys({1, 2});
  const std::vector<uint64_t> b = Keys({3, 4});
  ASSERT_EQ(Admit(cache, a), 2);
  ASSERT_EQ(Admit(cache, b), 2);
  cache.Release(a);  // a's blocks are free first: a[1], then a[0]
  cache.Release(b);
  const std::vector<uint64_t> c = Keys({5});
  ASSERT_EQ(Admit(cache, c), 1);
  // a's tail went first; its head survives.
  EXPECT_EQ(cache.Match(a), 1);
  EXPECT_EQ(cache.Match(b), 2);
  ASSERT_EQ(Admit(cache, Keys({6})), 1);
  EXPECT_EQ(cache.Match(a), 0);
  EXPECT_EQ(cache.Match(b), 2);
}

TEST(PrefixCacheTest, HitMovesBlocksToTheBackOfTheQueue) {
  PrefixCache cache(2);
  const std::vector<uint64_t> a = Keys({1});
  const std::vector<uint64_t> b = Keys({2});
  Admit(cache, a);
  cache.Release(a);
  Admit(cache, b);
  cache.Release(b);
  ASSERT_EQ(cache.Acquire(a, 1), 1);  // a used again: b is now the oldest free block
  cache.Release(a);
  Admit(cache, Keys({3}));
  EXPECT_EQ(cache.Match(a), 1);
  EXPECT_EQ(cache.Match(b), 0);
}

TEST(PrefixCacheTest, ReferencedBlocksAreNotEvicted) {
  PrefixCache cache(3);
  const std::vector<uint64_t> running = Keys({1, 2, 3});
  ASSERT_EQ(Admit(cache, running), 3);
  // Full of referenced blocks: nothing is stored, and the running prefix stays.
  EXPECT_EQ(Admit(cache, Keys({4, 5})), 0);
  EXPECT_EQ(cache.Match(running), 3);
  cache.TrimFree(0);
  EXPECT_EQ(cache.Match(running), 3);
  // Shared blocks stay referenced while any holder runs.
  ASSERT_EQ(cache.Acquire(running, 3), 3);
  cache.Release(running);
  cache.TrimFree(0);
  EXPECT_EQ(cache.Match(running), 3);
  cache.Release(running);
  EXPECT_EQ(cache.free_blocks(), 3);
  cache.TrimFree(1);
  EXPECT_EQ(cache.blocks(), 1);
  EXPECT_EQ(cache.Match(running), 1);  // the head was released last
}

TEST(PrefixCacheTest, StopsAtTheFirstBlockItCannotStore) {
  PrefixCache cache(3);
  const std::vector<uint64_t> held = Keys({1, 2});
  ASSERT_EQ(Admit(cache, held), 2);
  const std::vector<uint64_t> other = Keys({7, 8, 9});
  EXPECT_EQ(Admit(cache, other), 1);
  cache.Release(std::span<const uint64_t>(other.data(), 1));
  EXPECT_EQ(cache.Match(other), 1);
}

TEST(PrefixCacheTest, RestartedReplicaHoldsNothing) {
  PrefixCache cache(10);
  const std::vector<uint64_t> keys = Keys({1, 2, 3});
  Admit(cache, keys);
  cache.Release(keys);
  cache.Clear();
  EXPECT_EQ(cache.blocks(), 0);
  EXPECT_EQ(cache.free_blocks(), 0);
  EXPECT_EQ(cache.Match(keys), 0);
  EXPECT_EQ(Admit(cache, keys), 3);  // and works as new
}

TEST(PrefixCacheTest, ZeroCapacityCachesNothing) {
  PrefixCache cache(0);
  EXPECT_EQ(Admit(cache, Keys({1, 2})), 0);
  EXPECT_EQ(cache.blocks(), 0);
}

// The emulator publishes these as vLLM's BlockStored / BlockRemoved / AllBlocksCleared.
TEST(PrefixCacheTest, RecordsStoresEvictionsAndClears) {
  using Change = PrefixCache::Change;
  using Kind = PrefixCache::ChangeKind;
  PrefixCache cache(2);
  const std::vector<uint64_t> a = Keys({1, 2});
  const std::vector<uint64_t> b = Keys({3});
  Admit(cache, a);
  EXPECT_TRUE(cache.TakeChanges().empty());  // not recording yet
  cache.RecordChanges();
  cache.Release(a);
  Admit(cache, b);  // evicts a's tail first
  cache.Release(b);
  Admit(cache, a);  // a's head is still cached: only its tail is stored, after an eviction
  EXPECT_EQ(cache.TakeChanges(), (std::vector<Change>{{Kind::kRemoved, a[1], std::nullopt},
                                                      {Kind::kStored, b[0], std::nullopt},
                                                      {Kind::kRemoved, b[0], std::nullopt},
                                                      {Kind::kStored, a[1], a[0]}}));
  cache.Clear();
  EXPECT_EQ(cache.TakeChanges(), (std::vector<Change>{{Kind::kCleared, 0, std::nullopt}}));
}

}  // namespace
}  // namespace gpuscale::sim
