// PrefixCache: one simulated replica's KV block cache, with vLLM's automatic prefix caching
// behaviour (vLLM v1 KVCacheManager / BlockPool):
//   - a prompt is cut into blocks of a fixed number of tokens; only full blocks are cached;
//   - a block is identified by its chain key, the hash of its parent's key and its own
//     content (ChainKeys), so one key stands for the whole prefix up to and including it;
//   - a lookup hits only for the leading run of blocks present, from the first block on;
//   - blocks held by running requests are referenced and never evicted; a block whose last
//     reference is released joins the tail of an LRU free queue, and a request's blocks are
//     released last block first, so a prefix's tail is evicted before its head (as vLLM
//     frees a request's blocks in reverse order);
//   - when the cache is full, storing a block evicts the free queue's head; with every block
//     referenced the block is not cached (and neither are the ones after it: a chain with a
//     hole could never hit past it).
//
// Keys are opaque 64-bit values (from the trace's hash_ids, or anything else); the cache
// counts blocks and does no I/O. Ownership: owns its entries. Thread-safety: none (the
// simulation thread owns it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuscale::sim {

class PrefixCache {
 public:
  // REQUIRES: capacity_blocks >= 0 (0 caches nothing).
  explicit PrefixCache(int64_t capacity_blocks);

  // Chain keys of a prompt's block hashes: key[i] mixes key[i-1] (a fixed seed for i = 0) with
  // hash_ids[i], so equal keys mean equal prefixes even where a trace reuses a block hash
  // under different parents.
  static void ChainKeys(std::span<const uint64_t> hash_ids, std::vector<uint64_t>* keys);

  // The number of leading keys cached (referenced or free); changes nothing.
  int64_t Match(std::span<const uint64_t> keys) const;
  // References the leading cached run of `keys` (at most max_blocks of them) and returns its
  // length: those blocks leave the free queue until released.
  int64_t Acquire(std::span<const uint64_t> keys, int64_t max_blocks);
  // Stores and references keys[from..] one by one (a key already cached by another request is
  // referenced instead), evicting free blocks when full. Stops at the first block that cannot
  // be stored. Returns how many leading keys the caller now references (from + stored).
  // REQUIRES: the caller references keys[0, from) (from Acquire or an earlier Store).
  int64_t Store(std::span<const uint64_t> keys, int64_t from);
  // Drops one reference from each of `keys` (the caller's leading referenced run), last first.
  void Release(std::span<const uint64_t> keys);
  // Evicts free blocks, oldest first, until at most `max_free` remain (the replica's free KV
  // memory shrank under admitted requests).
  void TrimFree(int64_t max_free);
  // Forgets every block (a restarted engine starts cold). References held are void.
  void Clear();

  // A change to the set of cached blocks, for an engine that publishes them (vLLM's KV events,
  // the emulator): kStored with the key before it in its prompt's chain (none for a prompt's
  // first block), kRemoved when evicted, kCleared by Clear.
  enum class ChangeKind { kStored, kRemoved, kCleared };
  struct Change {
    ChangeKind kind = ChangeKind::kStored;
    uint64_t key = 0;
    std::optional<uint64_t> parent;
    friend bool operator==(const Change&, const Change&) = default;
  };
  // Records changes from now on (off by default: the simulator reads none).
  void RecordChanges() { record_ = true; }
  // The changes since the last call, oldest first.
  std::vector<Change> TakeChanges() { return std::exchange(changes_, {}); }

  int64_t capacity_blocks() const { return capacity_; }
  int64_t blocks() const { return static_cast<int64_t>(index_.size()); }
  int64_t free_blocks() const { return free_count_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Entry {
    uint64_t key = 0;
    int32_t refs = 0;
    uint32_t prev = kNone, next = kNone;  // free-queue links while refs == 0
  };

  void Reference(uint32_t slot);
  void Unreference(uint32_t slot);
  void PushFree(uint32_t slot);
  void UnlinkFree(uint32_t slot);
  bool EvictOne();
  uint32_t Allocate(uint64_t key);

  int64_t capacity_;
  std::vector<Entry> entries_;
  std::vector<uint32_t> unused_;  // slots of entries_ holding no block
  std::unordered_map<uint64_t, uint32_t> index_;
  uint32_t free_head_ = kNone, free_tail_ = kNone;  // head: evicted first
  int64_t free_count_ = 0;
  bool record_ = false;
  std::vector<Change> changes_;
};

}  // namespace gpuscale::sim
