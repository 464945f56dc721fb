#include "emulator/disagg_role.h"

#include <fmt/format.h>

#include <utility>

#include "emulator/engine_flags.h"
#include "sim/disagg.h"

namespace gpuscale::emulator {

Result<ReplicaRole> ParseReplicaRole(std::string_view text) {
  if (text == "aggregated") return ReplicaRole::kAggregated;
  if (text == "prefill") return ReplicaRole::kPrefill;
  if (text == "decode") return ReplicaRole::kDecode;
  return InvalidArgument(fmt::format("expected aggregated, prefill or decode, got '{}'", text),
                         "--role");
}

std::string_view ReplicaRoleName(ReplicaRole role) {
  switch (role) {
    case ReplicaRole::kPrefill:
      return "prefill";
    case ReplicaRole::kDecode:
      return "decode";
    case ReplicaRole::kAggregated:
      break;
  }
  return "aggregated";
}

Result<KvLink> ParseKvLink(std::string_view text) {
  // The emulated model resembles an 8B Llama on an H100 (engine_flags.h).
  Result<sim::LinkSpec> link = sim::ParseLink(text, "h100");
  if (!link) return InvalidArgument(link.error().message, "--kv-link");
  return KvLink{link->name, link->gbps};
}

double KvTransferSeconds(int64_t prompt_tokens, const KvLink& link) {
  return sim::KvTransferSeconds(prompt_tokens, kKvBytesPerToken,
                                sim::LinkSpec{link.name, link.gbps});
}

KvTransferParams MakeKvHandle(std::string engine_id, std::string host, int32_t port,
                              int32_t prompt_tokens, int64_t first_block) {
  KvTransferParams handle;
  handle.do_remote_prefill = true;
  handle.remote_engine_id = std::move(engine_id);
  handle.remote_host = std::move(host);
  handle.remote_port = port;
  handle.prompt_tokens = prompt_tokens;
  for (int64_t b = 0; b < KvBlocks(prompt_tokens); ++b)
    handle.remote_block_ids.push_back(first_block + b);
  return handle;
}

namespace {

// Disaggregated requests carry one prompt's KV: vLLM's proxy sends one prompt, n = 1.
Status CheckOneChoice(const CompletionRequest& request) {
  if (request.Choices() != 1) {
    return InvalidArgument(
        fmt::format("a disaggregated request has one prompt and n = 1, got {} choices",
                    request.Choices()),
        request.n != 1 ? "n" : "prompt");
  }
  return OkStatus();
}

}  // namespace

Status CheckDecodeHandle(const CompletionRequest& request) {
  constexpr const char* kField = "kv_transfer_params";
  if (!request.kv_transfer) {
    return InvalidArgument(
        "this is a decode replica: send the kv_transfer_params a prefill replica returned "
        "(ask it with kv_transfer_params.do_remote_decode: true and max_tokens: 1)",
        kField);
  }
  const KvTransferParams& p = *request.kv_transfer;
  if (!p.do_remote_prefill) {
    return InvalidArgument("expected true: the handle of a prefill replica",
                           "kv_transfer_params.do_remote_prefill");
  }
  if (p.remote_engine_id.empty()) {
    return InvalidArgument("expected the prefill replica's engine id",
                           "kv_transfer_params.remote_engine_id");
  }
  if (p.prompt_tokens < 1) {
    return InvalidArgument("expected the prompt tokens the KV holds (>= 1)",
                           "kv_transfer_params.prompt_tokens");
  }
  return CheckOneChoice(request);
}

Status CheckPrefillRequest(const CompletionRequest& request) {
  if (request.stream) {
    return InvalidArgument(
        "a prefill for a remote decode answers with one JSON body: set stream to false", "stream");
  }
  return CheckOneChoice(request);
}

Result<RolePlan> PlanRole(ReplicaRole role, const KvLink& link, const CompletionRequest& request) {
  RolePlan plan;
  if (role == ReplicaRole::kDecode) {
    GS_RETURN_IF_ERROR(CheckDecodeHandle(request));
    plan.prefilled = true;
    plan.transfer_seconds = KvTransferSeconds(request.kv_transfer->prompt_tokens, link);
  } else if (role == ReplicaRole::kPrefill && request.kv_transfer &&
             request.kv_transfer->do_remote_decode) {
    GS_RETURN_IF_ERROR(CheckPrefillRequest(request));
    plan.answer_handle = true;
  }
  return plan;
}

}  // namespace gpuscale::emulator
