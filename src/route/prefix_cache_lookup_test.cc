#include "route/prefix_cache_lookup.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::route {
namespace {

using kvevents::KvEvent;
using kvevents::KvEventBatch;
using kvevents::KvEventKind;

KvEventBatch StoredBatch(std::vector<uint64_t> hashes) {
  KvEvent e;
  e.kind = KvEventKind::kBlockStored;
  e.block_hashes = std::move(hashes);
  e.block_size = 4;
  return KvEventBatch{1.0, {e}, {}};
}

PrefixCacheLookupOptions LookupOptions(PrefixIndexMode mode) {
  return {.mode = mode, .block_tokens = 4, .capacity_blocks = 100, .ttl_seconds = 60};
}

// A prompt of 17 tokens: four full blocks, all looked up (the 17th token is computed anyway).
const std::vector<uint64_t> kPromptKeys = {11, 12, 13, 14};
constexpr int64_t kPromptTokens = 17;

std::vector<Candidate> TwoCandidates() { return {{.identity = 1}, {.identity = 2}}; }

TEST(PrefixCacheLookupTest, ApproximateMatchesWhatWasRoutedWithinTheTtl) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kApproximate));
  lookup.Routed(2, kPromptKeys, kPromptTokens, 0);
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 10);
  EXPECT_EQ(c[0].cached_tokens, 0);
  EXPECT_EQ(c[1].cached_tokens, 16);
  lookup.Fill(c, kPromptKeys, kPromptTokens, 61);  // expired
  EXPECT_EQ(c[1].cached_tokens, 0);
  // KV events are not listened to in approximate mode.
  lookup.Apply(1, 0, StoredBatch(kPromptKeys));
  EXPECT_FALSE(lookup.Precise(1));
}

TEST(PrefixCacheLookupTest, LooksUpAllButTheLastTokenAsTheEngineDoes) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kApproximate));
  lookup.Routed(1, kPromptKeys, 16, 0);  // 16 tokens leave 4 blocks cached...
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, 16,
              1);  // ...but the same prompt looks up 3: its last token is computed
  EXPECT_EQ(c[0].cached_tokens, 12);
}

TEST(PrefixCacheLookupTest, PreciseTrustsAReplicasEventsOverWhatWasRouted) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Routed(1, kPromptKeys, kPromptTokens,
                0);  // routed to 1, but 1 evicted it (no event stored it)
  lookup.Apply(1, 0, StoredBatch({11}));
  lookup.Apply(2, 0, StoredBatch({11, 12, 13}));  // 2 holds it (another router sent it there)
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);
  EXPECT_EQ(c[0].cached_tokens, 4);
  EXPECT_EQ(c[1].cached_tokens, 12);
}

TEST(PrefixCacheLookupTest, PreciseFallsBackToApproximateForAnUntrustedReplica) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Routed(1, kPromptKeys, kPromptTokens, 0);
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);  // 1 never published: what was routed there counts
  EXPECT_FALSE(lookup.Precise(1));
  EXPECT_EQ(c[0].cached_tokens, 16);
  lookup.Apply(1, 0, StoredBatch({11}));
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);
  EXPECT_EQ(c[0].cached_tokens, 4);
  lookup.Restart(1);  // its engine went away: routed on the approximate index again
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);
  EXPECT_FALSE(lookup.Precise(1));
  EXPECT_EQ(c[0].cached_tokens, 16);
}

TEST(PrefixCacheLookupTest, RetainForgetsOnlyTheReplicasThatLeft) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Apply(1, 0, StoredBatch(kPromptKeys));
  lookup.Apply(2, 0, StoredBatch(kPromptKeys));
  lookup.Routed(2, kPromptKeys, kPromptTokens, 0);
  lookup.Retain({1});
  EXPECT_EQ(lookup.precise().BlocksOf(1), 4);
  EXPECT_EQ(lookup.precise().BlocksOf(2), 0);
  EXPECT_EQ(lookup.approximate().BlocksOf(2), 0);
  EXPECT_FALSE(lookup.Precise(2));
}

}  // namespace
}  // namespace gpuscale::route
