// route::PrefixCacheLookup: what prefix_cache routing (route/picker.h) needs to know of each
// replica's prefix cache, from the source the router spec names (PrefixIndexMode):
//   - approximate: a route::PrefixIndex fed with what this router itself sent where;
//   - precise: a route::KvBlockIndex fed with the replicas' KV events, per replica while the
//     index trusts that replica's stream (kv_block_index.h), plus the blocks routed there that
//     its events have not confirmed yet (below); a replica it does not trust (never
//     published, a gap not yet resynced, just restarted) is looked up on the approximate
//     index, which is fed in both modes so that it is ready for the fallback.
// Unconfirmed blocks: an engine reports a prompt's blocks stored only once it has admitted and
// prefilled the request (seconds later under load), so events alone miss a prefix routed a
// moment ago and send the next request that shares it elsewhere, where it is prefilled and
// cached a second time. So precise mode counts a trusted replica as holding the leading run of
// a prompt's blocks each of which either its events hold or the approximate index got from
// Routed() for that replica within `unconfirmed_seconds` before `now`. An event wins over
// an entry routed before it: a BlockRemoved (on the GPU) erases the replica's approximate entries
// for those blocks and an AllBlocksCleared all of them, so a block routed, stored and then
// evicted is not counted again, while one routed after the removal is. A routed block that
// the events later store is simply held; one never stored (the request failed, or the engine
// hashes blocks otherwise) stops counting after the window.
// Lookups follow the engines: a prompt of n tokens looks up at most (n - 1) / block_tokens
// full blocks (vLLM always computes the last token), and leaves n / block_tokens blocks cached.
// A replica is named by its Candidate::identity.
//
// Pure: time is a parameter. Ownership: owns both indexes. Thread-safety: none; callers
// serialize (the gateway under a lock of its own, apart from its routing lock, so that
// applying KV events never waits on routing nor routing on a socket).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>

#include "kvevents/kv_event.h"
#include "route/kv_block_index.h"
#include "route/picker.h"
#include "route/picker_spec.h"
#include "route/prefix_index.h"

namespace gpuscale::route {

struct PrefixCacheLookupOptions {
  PrefixIndexMode mode = PrefixIndexMode::kApproximate;
  int32_t block_tokens = 16;          // tokens per KV block; the replicas' --block-size
  int64_t capacity_blocks = 100'000;  // per replica: the approximate index's bound, and the
                                      // new blocks a gap needs before precise is trusted again
  double ttl_seconds = 300;           // the approximate index's entries
  // Precise mode: how long a block routed to a replica counts as held before the replica's
  // events store it (above); about the longest wait for admission and prefill.
  double unconfirmed_seconds = 10;
};

class PrefixCacheLookup {
 public:
  // REQUIRES: block_tokens >= 1, capacity_blocks >= 1, ttl_seconds > 0,
  // unconfirmed_seconds >= 0.
  explicit PrefixCacheLookup(const PrefixCacheLookupOptions& options);

  // Sets each candidate's cached_tokens for a prompt of `prompt_tokens` whose full blocks'
  // chain keys are `keys` (route/prompt_blocks.h), first block first.
  void Fill(std::span<Candidate> candidates, std::span<const uint64_t> keys, int64_t prompt_tokens,
            double now) const;
  // Records that the prompt was sent to `replica` at `now` (the approximate index).
  void Routed(uint64_t replica, std::span<const uint64_t> keys, int64_t prompt_tokens, double now);

  // The replica's KV-event stream (precise mode; ignored in approximate mode). Its removals
  // also erase the replica's approximate entries for those blocks (above).
  void Apply(uint64_t replica, uint64_t seq, const kvevents::KvEventBatch& batch);
  void Restart(uint64_t replica) { precise_.Restart(replica); }
  // Forgets every replica not in `live` (those that left: their caches went with them).
  void Retain(const std::unordered_set<uint64_t>& live);

  // Whether `replica` is looked up on its own KV events.
  bool Precise(uint64_t replica) const;
  const KvBlockIndex& precise() const { return precise_; }
  const PrefixIndex& approximate() const { return approximate_; }
  int32_t block_tokens() const { return block_tokens_; }

 private:
  // A trusted replica's match in precise mode: its events' blocks plus unconfirmed ones.
  int64_t HeldOrRouted(uint64_t replica, std::span<const uint64_t> keys, double now) const;
  // Erases the approximate entries of what `batch` reports `replica` no longer holds.
  void ForgetRemoved(uint64_t replica, const kvevents::KvEventBatch& batch);

  PrefixIndexMode mode_;
  int32_t block_tokens_;
  double unconfirmed_seconds_;
  PrefixIndex approximate_;
  KvBlockIndex precise_;
  std::unordered_set<uint64_t> known_;  // replicas either index may hold entries for
};

}  // namespace gpuscale::route
