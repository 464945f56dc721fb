// The roles an emulated replica plays in prefill/decode disaggregated serving (issue 24), in
// the shape of vLLM's disaggregated prefill (its NIXL/P2P connectors and their toy proxy):
//   - aggregated (default): prefill and decode on the same replica, kv_transfer_params ignored;
//   - prefill: a request with kv_transfer_params.do_remote_decode runs its prefill and first
//     token here and is answered with a KV handle (MakeKvHandle) in its kv_transfer_params; a
//     request without it is served whole, as vLLM's kv_both role does;
//   - decode: every completion must carry the handle a prefill replica returned
//     (do_remote_prefill); the replica waits the emulated KV transfer (KvTransferSeconds),
//     then decodes without a prefill (BatchEngine::Submit's `prefilled`).
// The transfer time follows the simulator's (sim/disagg.h): prompt tokens x KV bytes per
// token (kKvBytesPerToken, the emulated model's) / the link's bandwidth, with its presets.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "emulator/openai_protocol.h"

namespace gpuscale::emulator {

enum class ReplicaRole { kAggregated, kPrefill, kDecode };

// "aggregated", "prefill" or "decode". Errors: kInvalidArgument naming "--role".
Result<ReplicaRole> ParseReplicaRole(std::string_view text);
std::string_view ReplicaRoleName(ReplicaRole role);

// The KV link between prefill and decode replicas.
struct KvLink {
  std::string name = "rdma-400g";  // a preset, or "<n> Gb/s"
  double gbps = 400;               // gigabits per second, one direction
};

// The simulator's presets (sim::ParseLink): `nvlink` (an H100's, the GPU the emulated model
// resembles), `rdma-100g`, `rdma-400g`, or a number of Gb/s > 0. Errors: kInvalidArgument
// naming "--kv-link".
Result<KvLink> ParseKvLink(std::string_view text);

// Seconds to move the KV cache of `prompt_tokens` tokens of the emulated model over `link`.
double KvTransferSeconds(int64_t prompt_tokens, const KvLink& link);

// vLLM's KV block size in tokens: a handle lists one block id per started block.
inline constexpr int32_t kKvBlockTokens = 16;
inline int64_t KvBlocks(int32_t prompt_tokens) {
  return (int64_t{prompt_tokens} + kKvBlockTokens - 1) / kKvBlockTokens;
}

// The handle a prefill replica returns for a prompt of `prompt_tokens` tokens whose KV sits
// in blocks first_block, first_block + 1, ... of the replica `engine_id` at host:port.
KvTransferParams MakeKvHandle(std::string engine_id, std::string host, int32_t port,
                              int32_t prompt_tokens, int64_t first_block);

// Whether a decode replica can take `request`: ok when it carries a usable handle, else
// kInvalidArgument naming the field at fault (kv_transfer_params or one of its members).
Status CheckDecodeHandle(const CompletionRequest& request);

// Whether a prefill replica can produce a handle for `request` (asked when it sets
// do_remote_decode): the handle is a non-streaming answer for one prompt and one choice.
// Errors: kInvalidArgument naming "stream" or "n".
Status CheckPrefillRequest(const CompletionRequest& request);

// What a replica of `role` does with an admitted request.
struct RolePlan {
  bool answer_handle = false;   // prefill: answer with a KV handle (MakeKvHandle)
  bool prefilled = false;       // decode: the prompt's KV comes from a prefill replica
  double transfer_seconds = 0;  // decode: the emulated transfer before decoding
};

// Errors: those of CheckDecodeHandle (decode) and CheckPrefillRequest (prefill asked with
// do_remote_decode). An aggregated replica ignores kv_transfer_params, as vLLM does without a
// KV connector.
Result<RolePlan> PlanRole(ReplicaRole role, const KvLink& link, const CompletionRequest& request);

}  // namespace gpuscale::emulator
