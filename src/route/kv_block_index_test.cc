#include "route/kv_block_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::route {
namespace {

using kvevents::KvEvent;
using kvevents::KvEventBatch;
using kvevents::KvEventKind;

KvEvent Stored(std::vector<uint64_t> hashes, std::string medium = "GPU") {
  KvEvent e;
  e.kind = KvEventKind::kBlockStored;
  e.block_hashes = std::move(hashes);
  e.block_size = 16;
  e.medium = std::move(medium);
  return e;
}
KvEvent Removed(std::vector<uint64_t> hashes) {
  KvEvent e = Stored(std::move(hashes));
  e.kind = KvEventKind::kBlockRemoved;
  return e;
}
KvEventBatch Batch(std::vector<KvEvent> events) { return KvEventBatch{1.0, std::move(events), 0}; }

const std::vector<uint64_t> kPrompt = {11, 12, 13, 14};

TEST(KvBlockIndexTest, StoresAndRemovesAChainPerReplica) {
  KvBlockIndex index(/*resync_blocks=*/4);
  index.Apply(1, 0, Batch({Stored({11, 12, 13})}));
  index.Apply(2, 0, Batch({Stored({11})}));
  EXPECT_TRUE(index.Trusted(1));
  EXPECT_EQ(index.Match(1, kPrompt), 3);
  EXPECT_EQ(index.Match(2, kPrompt), 1);
  // vLLM evicts a prefix's tail first; a hole ends the match even if later blocks remain.
  index.Apply(1, 1, Batch({Removed({12})}));
  EXPECT_EQ(index.Match(1, kPrompt), 1);
  EXPECT_EQ(index.BlocksOf(1), 2);
  // Blocks offloaded to CPU are not in the GPU cache.
  index.Apply(2, 1, Batch({Stored({12}, "CPU")}));
  EXPECT_EQ(index.Match(2, kPrompt), 1);
}

TEST(KvBlockIndexTest, NeverPublishedIsUntrusted) {
  KvBlockIndex index(4);
  EXPECT_FALSE(index.Trusted(7));
  EXPECT_EQ(index.Match(7, kPrompt), 0);
}

TEST(KvBlockIndexTest, GapDropsEntriesUntilTheCacheTurnsOver) {
  KvBlockIndex index(/*resync_blocks=*/3);
  index.Apply(1, 0, Batch({Stored({11, 12})}));
  index.Apply(1, 2, Batch({Stored({13})}));  // sequence 1 was missed
  EXPECT_EQ(index.GapsOf(1), 1);
  EXPECT_FALSE(index.Trusted(1));
  EXPECT_EQ(index.BlocksOf(1), 1);               // rebuilt from events after the gap only
  index.Apply(1, 3, Batch({Stored({21, 13})}));  // 13 again does not count twice
  EXPECT_FALSE(index.Trusted(1));
  index.Apply(1, 4, Batch({Stored({22})}));
  EXPECT_TRUE(index.Trusted(1));
  EXPECT_EQ(index.BlocksOf(1), 3);
}

TEST(KvBlockIndexTest, ClearedAllRestoresTrustAfterAGap) {
  KvBlockIndex index(100);
  index.Apply(1, 5, Batch({Stored({11})}));  // subscribed late: events 0..4 missed
  EXPECT_FALSE(index.Trusted(1));
  index.Apply(1, 6, Batch({KvEvent{}, Stored({12})}));
  EXPECT_TRUE(index.Trusted(1));
  EXPECT_EQ(index.BlocksOf(1), 1);
  EXPECT_EQ(index.Match(1, kPrompt), 0);  // 11 went with the clear
}

TEST(KvBlockIndexTest, RestartedPublisherStartsEmpty) {
  KvBlockIndex index(4);
  index.Apply(1, 0, Batch({Stored({11, 12})}));
  EXPECT_TRUE(index.Apply(1, 1, Batch({Stored({13})})));
  EXPECT_FALSE(index.Apply(1, 1, Batch({Stored({14})})));  // a duplicate of sequence 1: ignored
  EXPECT_EQ(index.BlocksOf(1), 3);
  index.Apply(1, 0, Batch({Stored({21})}));  // sequence back to 0: a new process
  EXPECT_TRUE(index.Trusted(1));
  EXPECT_EQ(index.GapsOf(1), 0);
  EXPECT_EQ(index.Match(1, kPrompt), 0);
  EXPECT_EQ(index.BlocksOf(1), 1);
  // The caller may know first (the process exited): untrusted until the new stream arrives.
  index.Restart(1);
  EXPECT_FALSE(index.Trusted(1));
  EXPECT_EQ(index.BlocksOf(1), 0);
  index.Apply(1, 0, Batch({Stored({11})}));
  EXPECT_TRUE(index.Trusted(1));
  EXPECT_EQ(index.Match(1, kPrompt), 1);
}

// Replicas joining and leaving touch only their own entries.
TEST(KvBlockIndexTest, ChurnMovesOnlyTheReplicaThatLeft) {
  KvBlockIndex index(4);
  for (uint64_t r = 1; r <= 3; ++r) index.Apply(r, 0, Batch({Stored({11, 12})}));
  index.Forget(2);
  EXPECT_FALSE(index.Trusted(2));
  EXPECT_EQ(index.Match(2, kPrompt), 0);
  EXPECT_EQ(index.Match(1, kPrompt), 2);
  EXPECT_EQ(index.Match(3, kPrompt), 2);
  index.Apply(4, 0, Batch({Stored({11})}));
  EXPECT_EQ(index.Match(4, kPrompt), 1);
  EXPECT_EQ(index.Match(1, kPrompt), 2);
}

}  // namespace
}  // namespace gpuscale::route
