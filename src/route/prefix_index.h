// route::PrefixIndex: the approximate source of prefix_cache routing (route/picker.h). It
// remembers which prompt blocks this router sent to which replica, and assumes a replica
// still holds a block it was sent within `ttl_seconds`, up to `capacity_blocks` blocks per
// replica (least recently routed forgotten first): llm-d's approximate prefix-cache scorer
// and SGLang's cache-aware router keep the same kind of table, built from their own routing
// decisions rather than from the engines. In precise mode its young entries also stand for
// blocks a replica's KV events have not confirmed yet, and those events' removals erase
// entries (route/prefix_cache_lookup.h).
//
// Keys are chain keys (a key names its whole prefix, as in vLLM's block hashes), so a
// replica's match is the leading run of a prompt's keys it holds. Replicas are named by the
// Candidate::identity the caller uses. Pure: time is a parameter.
//
// Ownership: owns its tables. Thread-safety: none; callers serialize (the picker's caller).
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <utility>

namespace gpuscale::route {

class PrefixIndex {
 public:
  // REQUIRES: capacity_blocks >= 1, ttl_seconds > 0.
  PrefixIndex(int64_t capacity_blocks, double ttl_seconds);

  // The number of leading `keys` recorded for `replica` within the ttl before `now`.
  int64_t Match(uint64_t replica, std::span<const uint64_t> keys, double now) const {
    return MatchWithin(replica, keys, now, ttl_);
  }
  // The same, counting only entries recorded within `max_age_seconds` before `now` (at most
  // the ttl: older entries are not kept).
  int64_t MatchWithin(uint64_t replica, std::span<const uint64_t> keys, double now,
                      double max_age_seconds) const;
  // Records that `keys` were sent to `replica` at `now` (refreshing keys already there).
  void Record(uint64_t replica, std::span<const uint64_t> keys, double now);
  // Forgets `keys` of `replica` (the replica reported them evicted).
  void Erase(uint64_t replica, std::span<const uint64_t> keys);
  // Forgets a replica that left (its cache went with it).
  void Forget(uint64_t replica) { replicas_.erase(replica); }

  int64_t BlocksOf(uint64_t replica) const;

 private:
  // One replica's blocks, most recently routed at the front.
  struct Replica {
    std::list<std::pair<uint64_t, double>> lru;  // (key, last routed at)
    std::unordered_map<uint64_t, std::list<std::pair<uint64_t, double>>::iterator> where;
  };

  int64_t capacity_;
  double ttl_;
  std::unordered_map<uint64_t, Replica> replicas_;
};

}  // namespace gpuscale::route
