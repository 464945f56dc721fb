// vLLM's KV-cache events as domain types: what one engine reports about the blocks of its
// prefix cache (vllm/distributed/kv_events.py: KVEventBatch of BlockStored, BlockRemoved,
// AllBlocksCleared; enabled with vLLM's --kv-events-config). A router that applies them in
// sequence knows which blocks each replica holds (route/kv_block_index.h).
//
// Block hashes are 64-bit: vLLM sends them as integers (signed in its first releases, which
// used Python's hash(); unsigned 64-bit since) or, unless VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES
// is set, as the hash's bytes; the decoder folds bytes the way vLLM's own int conversion does
// (the low 64 bits of the big-endian value), so both forms of one engine's stream agree.
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscale::kvevents {

enum class KvEventKind { kBlockStored, kBlockRemoved, kAllBlocksCleared };

// vLLM's tag for the kind ("BlockStored", ...), the msgspec class name.
std::string_view KvEventKindName(KvEventKind kind);

struct KvEvent {
  KvEventKind kind = KvEventKind::kAllBlocksCleared;
  // kBlockStored and kBlockRemoved: the blocks, in chain order for a store.
  std::vector<uint64_t> block_hashes;
  // kBlockStored only: the block the first stored one extends (none: the prompt's first block).
  std::optional<uint64_t> parent_block_hash;
  std::vector<int64_t> token_ids;  // kBlockStored: the stored blocks' tokens, in order
  int64_t block_size = 0;          // kBlockStored: tokens per block
  std::optional<int64_t> lora_id;  // kBlockStored
  std::string medium;              // "GPU", "CPU", ...; empty when the engine sent none

  friend bool operator==(const KvEvent&, const KvEvent&) = default;
};

// Whether `e` is about the GPU's cache: vLLM's KV offloading also reports blocks on "CPU" and
// other media, and an engine that names no medium has only the GPU's.
inline bool OnGpu(const KvEvent& e) { return e.medium.empty() || e.medium == "GPU"; }

struct KvEventBatch {
  double ts = 0;  // the engine's wall clock, seconds since the epoch
  std::vector<KvEvent> events;
  std::optional<int64_t> data_parallel_rank;

  friend bool operator==(const KvEventBatch&, const KvEventBatch&) = default;
};

// One ZeroMQ message of the stream: [topic, 8-byte big-endian sequence number, payload].
struct KvEventMessage {
  std::string topic;
  uint64_t seq = 0;
  KvEventBatch batch;
};

}  // namespace gpuscale::kvevents
