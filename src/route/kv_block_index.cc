#include "route/kv_block_index.h"

#include <algorithm>

namespace gpuscale::route {

using kvevents::KvEvent;
using kvevents::KvEventKind;

KvBlockIndex::KvBlockIndex(int64_t resync_blocks)
    : resync_blocks_(std::max<int64_t>(resync_blocks, 1)) {}

void KvBlockIndex::Resync(Replica& r) {
  r.blocks.clear();
  r.resync_left = resync_blocks_;
}

bool KvBlockIndex::Apply(uint64_t replica, uint64_t seq, const kvevents::KvEventBatch& batch) {
  Replica& r = replicas_[replica];
  if (!r.heard) {
    // Sequence 0 is a fresh engine's first message; anything later means events were missed.
    r.blocks.clear();
    r.resync_left = seq == 0 ? 0 : resync_blocks_;
  } else if (seq == r.last_seq) {
    return false;  // a duplicate
  } else if (seq < r.last_seq) {
    r.blocks.clear();  // a new publisher process: counts from 0, starts with an empty cache
    r.resync_left = seq == 0 ? 0 : resync_blocks_;
  } else if (seq > r.last_seq + 1) {
    ++r.gaps;
    Resync(r);
  }
  r.heard = true;
  r.last_seq = seq;
  for (const KvEvent& e : batch.events) ApplyEvent(r, e);
  return true;
}

void KvBlockIndex::ApplyEvent(Replica& r, const KvEvent& e) {
  if (!kvevents::OnGpu(e)) return;
  switch (e.kind) {
    case KvEventKind::kBlockStored:
      for (uint64_t h : e.block_hashes) {
        if (r.blocks.insert(h).second && r.resync_left > 0) --r.resync_left;
      }
      break;
    case KvEventKind::kBlockRemoved:
      for (uint64_t h : e.block_hashes) r.blocks.erase(h);
      break;
    case KvEventKind::kAllBlocksCleared:
      r.blocks.clear();
      r.resync_left = 0;  // empty now, and known to be
      break;
  }
}

void KvBlockIndex::Restart(uint64_t replica) {
  auto it = replicas_.find(replica);
  if (it == replicas_.end()) return;
  const int64_t gaps = it->second.gaps;
  it->second = Replica{};
  it->second.gaps = gaps;
}

bool KvBlockIndex::Trusted(uint64_t replica) const {
  auto it = replicas_.find(replica);
  return it != replicas_.end() && it->second.heard && it->second.resync_left == 0;
}

int64_t KvBlockIndex::Match(uint64_t replica, std::span<const uint64_t> keys) const {
  auto it = replicas_.find(replica);
  if (it == replicas_.end()) return 0;
  int64_t n = 0;
  for (uint64_t key : keys) {
    if (!it->second.blocks.contains(key)) break;
    ++n;
  }
  return n;
}

int64_t KvBlockIndex::BlocksOf(uint64_t replica) const {
  auto it = replicas_.find(replica);
  return it == replicas_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
}

int64_t KvBlockIndex::GapsOf(uint64_t replica) const {
  auto it = replicas_.find(replica);
  return it == replicas_.end() ? 0 : it->second.gaps;
}

}  // namespace gpuscale::route
