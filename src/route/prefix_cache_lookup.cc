#include "route/prefix_cache_lookup.h"

#include <algorithm>
#include <vector>

namespace gpuscale::route {
namespace {

// The first `blocks` keys (fewer when the prompt has fewer).
std::span<const uint64_t> Leading(std::span<const uint64_t> keys, int64_t blocks) {
  return keys.first(static_cast<size_t>(std::clamp<int64_t>(blocks, 0, std::ssize(keys))));
}

}  // namespace

PrefixCacheLookup::PrefixCacheLookup(const PrefixCacheLookupOptions& options)
    : mode_(options.mode),
      block_tokens_(std::max(options.block_tokens, 1)),
      unconfirmed_seconds_(std::max(options.unconfirmed_seconds, 0.0)),
      approximate_(options.capacity_blocks, options.ttl_seconds),
      precise_(options.capacity_blocks) {}

void PrefixCacheLookup::Fill(std::span<Candidate> candidates, std::span<const uint64_t> keys,
                             int64_t prompt_tokens, double now) const {
  const std::span<const uint64_t> lookup = Leading(keys, (prompt_tokens - 1) / block_tokens_);
  for (Candidate& c : candidates) {
    const int64_t blocks = Precise(c.identity) ? HeldOrRouted(c.identity, lookup, now)
                                               : approximate_.Match(c.identity, lookup, now);
    c.cached_tokens = blocks * block_tokens_;
  }
}

int64_t PrefixCacheLookup::HeldOrRouted(uint64_t replica, std::span<const uint64_t> keys,
                                        double now) const {
  // Alternate between the sources, each extending the run from where the other stopped: a
  // prompt's blocks are mostly one run in one source, so this costs one miss in each.
  int64_t n = 0;
  while (n < std::ssize(keys)) {
    n += precise_.Match(replica, keys.subspan(static_cast<size_t>(n)));
    const int64_t routed = approximate_.MatchWithin(replica, keys.subspan(static_cast<size_t>(n)),
                                                    now, unconfirmed_seconds_);
    if (routed == 0) break;
    n += routed;
  }
  return n;
}

void PrefixCacheLookup::Routed(uint64_t replica, std::span<const uint64_t> keys,
                               int64_t prompt_tokens, double now) {
  const std::span<const uint64_t> cached = Leading(keys, prompt_tokens / block_tokens_);
  if (cached.empty()) return;
  known_.insert(replica);
  approximate_.Record(replica, cached, now);
}

void PrefixCacheLookup::Apply(uint64_t replica, uint64_t seq, const kvevents::KvEventBatch& batch) {
  if (mode_ != PrefixIndexMode::kPrecise) return;
  known_.insert(replica);
  if (precise_.Apply(replica, seq, batch)) ForgetRemoved(replica, batch);
}

void PrefixCacheLookup::ForgetRemoved(uint64_t replica, const kvevents::KvEventBatch& batch) {
  for (const kvevents::KvEvent& e : batch.events) {
    if (!kvevents::OnGpu(e)) continue;
    if (e.kind == kvevents::KvEventKind::kBlockRemoved) {
      approximate_.Erase(replica, e.block_hashes);
    } else if (e.kind == kvevents::KvEventKind::kAllBlocksCleared) {
      approximate_.Forget(replica);
    }
  }
}

void PrefixCacheLookup::Retain(const std::unordered_set<uint64_t>& live) {
  std::vector<uint64_t> gone;
  for (uint64_t r : known_) {
    if (!live.contains(r)) gone.push_back(r);
  }
  for (uint64_t r : gone) {
    approximate_.Forget(r);
    precise_.Forget(r);
    known_.erase(r);
  }
}

bool PrefixCacheLookup::Precise(uint64_t replica) const {
  return mode_ == PrefixIndexMode::kPrecise && precise_.Trusted(replica);
}

}  // namespace gpuscale::route
