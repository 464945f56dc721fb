// route::KvBlockIndex: the precise source of prefix_cache routing (route/picker.h) on a live
// fleet. It applies each replica's KV-event stream (vLLM's BlockStored / BlockRemoved /
// AllBlocksCleared batches with their sequence numbers, kvevents/kv_event.h) to a set of the
// block hashes that replica holds, as NVIDIA Dynamo's KV router and llm-d's kv-cache indexer
// do. Replicas are named by the Candidate::identity the caller uses.
//
// Trust: a replica's entries are trusted (Trusted() true) only while the index has seen its
// stream whole. The caller routes an untrusted replica on the approximate index instead
// (route/prefix_index.h), as it does a replica that never published.
//   - A stream that starts at sequence 0 is a fresh engine (empty cache): trusted at once.
//   - A gap (a sequence number skipped), or a stream first seen past 0 (subscribed late):
//     the events missed may have stored blocks, so the entries held are dropped, later events
//     rebuild them, and the replica stays untrusted until it has announced `resync_blocks`
//     new blocks since (its cache's capacity: it has turned over once) or cleared all blocks.
//     Without vLLM's replay socket this is the nearest to exact a subscriber can get.
//   - A sequence number below the last one is a restarted publisher (vLLM counts from 0 in each
//     process): its blocks went with the old process; the stream starts afresh.
//   - Restart() says the same when the caller knows it first (the replica's process exited).
//   - A batch repeating the last sequence number is a duplicate and changes nothing.
// Events on a medium other than the GPU ("CPU", ... from vLLM's KV offloading) are ignored:
// the index answers what the GPU cache holds.
//
// Pure. Ownership: owns its tables. Thread-safety: none; callers serialize.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "kvevents/kv_event.h"

namespace gpuscale::route {

class KvBlockIndex {
 public:
  // REQUIRES: resync_blocks >= 1.
  explicit KvBlockIndex(int64_t resync_blocks);

  // Applies message `seq` of `replica`'s stream; false for a duplicate (nothing applied).
  bool Apply(uint64_t replica, uint64_t seq, const kvevents::KvEventBatch& batch);
  // The replica's engine restarted: its blocks are gone, its stream starts again.
  void Restart(uint64_t replica);
  // Forgets a replica that left.
  void Forget(uint64_t replica) { replicas_.erase(replica); }

  // Whether `replica`'s entries can be routed on (false for one never heard from).
  bool Trusted(uint64_t replica) const;
  // The number of leading `keys` (chain hashes, first block first) `replica` holds.
  int64_t Match(uint64_t replica, std::span<const uint64_t> keys) const;
  int64_t BlocksOf(uint64_t replica) const;
  // Gaps seen on `replica`'s stream (restarts are not gaps).
  int64_t GapsOf(uint64_t replica) const;

 private:
  struct Replica {
    std::unordered_set<uint64_t> blocks;
    uint64_t last_seq = 0;
    bool heard = false;       // a message arrived since the start or the last Restart
    int64_t resync_left = 0;  // blocks still to be announced before trusting again
    int64_t gaps = 0;
  };

  void Resync(Replica& r);
  void ApplyEvent(Replica& r, const kvevents::KvEvent& e);

  int64_t resync_blocks_;
  std::unordered_map<uint64_t, Replica> replicas_;
};

}  // namespace gpuscale::route
