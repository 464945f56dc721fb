// Decodes and encodes vLLM's KV-event wire format (kvevents/kv_event.h for the types).
//
// What vLLM publishes, and so what DecodeKvEventBatch accepts (checked against
// vllm/distributed/kv_events.py and examples/online_serving/kv_events_subscriber.py across
// releases):
//   - the batch: msgspec array_like, [ts, [events...], data_parallel_rank?] (ts a float; an
//     integer is taken too; the rank is nil, absent or an integer); a map
//     {"ts", "events", "data_parallel_rank"} is accepted as well (a struct without array_like);
//   - each event either positional, [tag, fields...] (releases up to 0.2x), or a map with the
//     tag under "type" and the fields by name (newer releases):
//       BlockStored      block_hashes, parent_block_hash|nil, token_ids, block_size,
//                        lora_id|nil, medium|nil, (lora_name, extra_keys, group_idx, ...)
//       BlockRemoved     block_hashes, medium|nil, (group_idx, ...)
//       AllBlocksCleared (no fields)
//     Fields after the ones above, and unknown map keys, are ignored (newer releases add them);
//     a positional BlockStored needs its first four fields, a BlockRemoved its first;
//   - a block hash: an integer (a negative one is taken as its 64-bit two's complement) or
//     bytes (folded as kv_event.h says).
// An unknown event tag is an error: skipping it could hide a change that empties the index.
//
// Errors are kInvalidArgument whose ToString reads like
// "event 3: BlockStored.block_hashes: expected an array, got a string".
// Pure; no state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/result.h"
#include "kvevents/kv_event.h"

namespace gpuscale::kvevents {

Result<KvEventBatch> DecodeKvEventBatch(std::span<const uint8_t> payload);
Result<KvEventBatch> DecodeKvEventBatch(std::string_view payload);

// The sequence-number frame: exactly 8 bytes, big-endian.
Result<uint64_t> DecodeKvEventSeq(std::string_view frame);
// A whole message's frames: topic, sequence number, payload.
Result<KvEventMessage> DecodeKvEventMessage(std::span<const std::string_view> frames);

// The payload vLLM's array_like encoding gives `batch` (positional events; the rank omitted
// when unset, as msgspec's omit_defaults does): what the example subscriber and every release
// decode.
std::string EncodeKvEventBatch(const KvEventBatch& batch);
std::string EncodeKvEventSeq(uint64_t seq);

}  // namespace gpuscale::kvevents
