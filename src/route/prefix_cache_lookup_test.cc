#include "route/prefix_cache_lookup.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::route {
namespace {

using kvevents::KvEvent;
using kvevents::KvEventBatch;
using kvevents::KvEventKind;

KvEventBatch Batch(KvEventKind kind, std::vector<uint64_t> hashes, std::string medium = "") {
  KvEvent e;
  e.kind = kind;
  e.block_hashes = std::move(hashes);
  e.block_size = kind == KvEventKind::kBlockStored ? 4 : 0;
  e.medium = std::move(medium);
  return KvEventBatch{1.0, {e}, {}};
}

KvEventBatch StoredBatch(std::vector<uint64_t> hashes) {
  return Batch(KvEventKind::kBlockStored, std::move(hashes));
}

KvEventBatch RemovedBatch(std::vector<uint64_t> hashes, std::string medium = "") {
  return Batch(KvEventKind::kBlockRemoved, std::move(hashes), std::move(medium));
}

PrefixCacheLookupOptions LookupOptions(PrefixIndexMode mode) {
  return {.mode = mode,
          .block_tokens = 4,
          .capacity_blocks = 100,
          .ttl_seconds = 60,
          .unconfirmed_seconds = 10};
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

TEST(PrefixCacheLookupTest, PreciseTrustsAReplicasEventsOverWhatWasRoutedPastTheWindow) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Routed(1, kPromptKeys, kPromptTokens, 0);  // routed to 1, which never stored it all
  lookup.Apply(1, 0, StoredBatch({11}));
  lookup.Apply(2, 0, StoredBatch({11, 12, 13}));  // 2 holds it (another router sent it there)
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 10.5);  // unconfirmed for longer than 10 s
  EXPECT_EQ(c[0].cached_tokens, 4);
  EXPECT_EQ(c[1].cached_tokens, 12);
}

TEST(PrefixCacheLookupTest, PreciseCountsBlocksRoutedThereThatItsEventsHaveNotStoredYet) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Apply(1, 0, StoredBatch({11}));  // both trusted, 1 holds the prompt's first block
  lookup.Apply(2, 0, StoredBatch({99}));
  lookup.Routed(2, kPromptKeys, kPromptTokens, 0);  // 2 is prefilling it: no event yet
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 10);  // unconfirmed for the whole window
  EXPECT_EQ(c[0].cached_tokens, 4);
  EXPECT_EQ(c[1].cached_tokens, 16);
  lookup.Fill(c, kPromptKeys, kPromptTokens, 10.5);  // never confirmed: no longer counted
  EXPECT_EQ(c[1].cached_tokens, 0);
  lookup.Apply(2, 1, StoredBatch({11, 12}));  // confirmed (late): held, however old the routing
  lookup.Fill(c, kPromptKeys, kPromptTokens, 50);
  EXPECT_EQ(c[1].cached_tokens, 8);
}

TEST(PrefixCacheLookupTest, PreciseJoinsHeldAndUnconfirmedRunsOfOnePrompt) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Apply(1, 0, StoredBatch({11, 13}));
  lookup.Routed(1, std::vector<uint64_t>{11, 12}, 8, 0);  // a shorter prompt routed there
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);  // 11 held, 12 routed, 13 held, 14 neither
  EXPECT_EQ(c[0].cached_tokens, 12);
}

TEST(PrefixCacheLookupTest, ARemovalEventWinsOverABlockRoutedBeforeIt) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Routed(1, kPromptKeys, kPromptTokens, 0);
  lookup.Apply(1, 0, StoredBatch({11, 12}));      // 13 and 14 not confirmed yet
  lookup.Apply(1, 1, RemovedBatch({14}, "CPU"));  // another medium's eviction: not the GPU's
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);
  EXPECT_EQ(c[0].cached_tokens, 16);
  lookup.Apply(1, 2, RemovedBatch({12}));  // evicted: its routed entry must not count again
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);
  EXPECT_EQ(c[0].cached_tokens, 4);
  lookup.Routed(1, kPromptKeys, kPromptTokens, 2);  // routed again after the removal: counts
  lookup.Fill(c, kPromptKeys, kPromptTokens, 3);
  EXPECT_EQ(c[0].cached_tokens, 16);
  lookup.Apply(1, 2, RemovedBatch({13, 14}));  // a duplicate of message 2: nothing removed
  lookup.Fill(c, kPromptKeys, kPromptTokens, 3);
  EXPECT_EQ(c[0].cached_tokens, 16);
  KvEventBatch cleared{1.0, {KvEvent{}}, {}};  // AllBlocksCleared: every routed entry goes too
  lookup.Apply(1, 3, cleared);
  lookup.Fill(c, kPromptKeys, kPromptTokens, 3);
  EXPECT_EQ(c[0].cached_tokens, 0);
}

TEST(PrefixCacheLookupTest, PreciseFallsBackToApproximateForAnUntrustedReplica) {
  PrefixCacheLookup lookup(LookupOptions(PrefixIndexMode::kPrecise));
  lookup.Routed(1, kPromptKeys, kPromptTokens, 0);
  std::vector<Candidate> c = TwoCandidates();
  lookup.Fill(c, kPromptKeys, kPromptTokens, 1);  // 1 never published: what was routed there counts
  EXPECT_FALSE(lookup.Precise(1));
  EXPECT_EQ(c[0].cached_tokens, 16);
  lookup.Apply(1, 0, StoredBatch({11}));
  lookup.Fill(c, kPromptKeys, kPromptTokens, 11);  // its events (the routing is 11 s old)
  EXPECT_EQ(c[0].cached_tokens, 4);
  lookup.Restart(1);  // its engine went away: routed on the approximate index again
  lookup.Fill(c, kPromptKeys, kPromptTokens, 11);
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
