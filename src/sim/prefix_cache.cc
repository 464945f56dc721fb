#include "sim/prefix_cache.h"

#include <algorithm>

#include "route/picker.h"

namespace gpuscale::sim {
PrefixCache::PrefixCache(int64_t capacity_blocks)
    : capacity_(std::max<int64_t>(capacity_blocks, 0)) {}

void PrefixCache::ChainKeys(std::span<const uint64_t> hash_ids, std::vector<uint64_t>* keys) {
  uint64_t parent = 0x6a09e667f3bcc909ull;  // any fixed seed: the root has no parent
  for (uint64_t id : hash_ids) {
    // Well mixed, so that the hash map's buckets stay even for the small consecutive
    // integers Mooncake uses as block hashes.
    parent = route::MixHash(parent, id);
    keys->push_back(parent);
  }
}

int64_t PrefixCache::Match(std::span<const uint64_t> keys) const {
  int64_t n = 0;
  while (n < static_cast<int64_t>(keys.size()) && index_.contains(keys[n])) ++n;
  return n;
}

int64_t PrefixCache::Acquire(std::span<const uint64_t> keys, int64_t max_blocks) {
  const int64_t limit = std::min<int64_t>(max_blocks, static_cast<int64_t>(keys.size()));
  int64_t n = 0;
  for (; n < limit; ++n) {
    auto it = index_.find(keys[n]);
    if (it == index_.end()) break;
    Reference(it->second);
  }
  return n;
}

int64_t PrefixCache::Store(std::span<const uint64_t> keys, int64_t from) {
  int64_t n = from;
  for (; n < static_cast<int64_t>(keys.size()); ++n) {
    auto it = index_.find(keys[n]);
    if (it != index_.end()) {
      Reference(it->second);
      continue;
    }
    if (blocks() >= capacity_ && !EvictOne()) break;
    const uint32_t slot = Allocate(keys[n]);
    entries_[slot].refs = 1;
    if (record_) {
      changes_.push_back({ChangeKind::kStored, keys[n],
                          n > 0 ? std::optional<uint64_t>(keys[n - 1]) : std::nullopt});
    }
  }
  return n;
}

void PrefixCache::Release(std::span<const uint64_t> keys) {
  for (auto key = keys.rbegin(); key != keys.rend(); ++key) {
    auto it = index_.find(*key);
    if (it != index_.end()) Unreference(it->second);
  }
}

void PrefixCache::TrimFree(int64_t max_free) {
  while (free_count_ > std::max<int64_t>(max_free, 0) && EvictOne()) {
  }
}

void PrefixCache::Clear() {
  entries_.clear();
  unused_.clear();
  index_.clear();
  free_head_ = free_tail_ = kNone;
  free_count_ = 0;
  if (record_) changes_ = {{ChangeKind::kCleared, 0, std::nullopt}};  // earlier ones are moot
}

void PrefixCache::Reference(uint32_t slot) {
  if (entries_[slot].refs++ == 0) UnlinkFree(slot);
}

void PrefixCache::Unreference(uint32_t slot) {
  if (entries_[slot].refs > 0 && --entries_[slot].refs == 0) PushFree(slot);
}

void PrefixCache::PushFree(uint32_t slot) {
  Entry& e = entries_[slot];
  e.prev = free_tail_;
  e.next = kNone;
  if (free_tail_ != kNone) {
    entries_[free_tail_].next = slot;
  } else {
    free_head_ = slot;
  }
  free_tail_ = slot;
  ++free_count_;
}

void PrefixCache::UnlinkFree(uint32_t slot) {
  Entry& e = entries_[slot];
  (e.prev != kNone ? entries_[e.prev].next : free_head_) = e.next;
  (e.next != kNone ? entries_[e.next].prev : free_tail_) = e.prev;
  e.prev = e.next = kNone;
  --free_count_;
}

bool PrefixCache::EvictOne() {
  if (free_head_ == kNone) return false;
  const uint32_t slot = free_head_;
  UnlinkFree(slot);
  index_.erase(entries_[slot].key);
  unused_.push_back(slot);
  if (record_) changes_.push_back({ChangeKind::kRemoved, entries_[slot].key, std::nullopt});
  return true;
}

uint32_t PrefixCache::Allocate(uint64_t key) {
  uint32_t slot;
  if (!unused_.empty()) {
    slot = unused_.back();
    unused_.pop_back();
  } else {
    slot = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  entries_[slot] = Entry{key, 0, kNone, kNone};
  index_.emplace(key, slot);
  return slot;
}

}  // namespace gpuscale::sim
