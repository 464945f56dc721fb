// The parts of OpenAI's HTTP protocol the gateway reads and writes itself: the request
// fields that route it (`model`, the prompt prefix for affinity), error bodies in OpenAI's
// shape, the /v1/models list, bearer tokens, and the timing of a relayed SSE stream. The
// request body is only read: it goes to the replica as the client sent it.
//
// Thread-safety: free functions; SseClock is a plain value.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpuscale::gateway {

struct InferenceRequest {
  std::string model;
  bool stream = false;
  uint64_t prefix_key = 0;  // hash of the prompt's first characters (prefix affinity)
  // With block_tokens > 0: the whole prompt's block keys (route/prompt_blocks.h) and its
  // whitespace words (prefix_cache routing); else null and 0.
  std::shared_ptr<const std::vector<uint64_t>> prompt_blocks;
  int64_t prompt_tokens = 0;
};

// Reads `model` (required, a non-empty string), `stream` (optional bool) and the prompt
// prefix: `prompt` (string or first string of an array), else the concatenated string
// contents of `messages`, else `input` (embeddings), first `prefix_chars` characters; with
// `block_tokens` > 0, the same text whole for the prompt's blocks of that many words.
// Errors: kInvalidArgument naming the field ("body" when it is not a JSON object).
Result<InferenceRequest> ParseInferenceRequest(std::string_view body, int prefix_chars,
                                               int block_tokens = 0);

// {"error": {"message", "type", "param", "code"}}; empty param/code are written as null.
std::string OpenAiErrorBody(std::string_view message, std::string_view type,
                            std::string_view param = {}, std::string_view code = {});

// {"object": "list", "data": [{"id", "object": "model", "created": 0, "owned_by"}]} from
// (model, service) pairs; owned_by names the service.
std::string ModelListBody(const std::vector<std::pair<std::string, std::string>>& models);

// GET /v1/models/{model}'s body: one entry of the list.
std::string ModelBody(const std::string& model, const std::string& service);

// True when `authorization` is "Bearer <token>" (scheme case-insensitive, constant-time
// comparison of the token).
bool BearerMatches(std::string_view authorization, std::string_view token);

// POST routes the gateway forwards.
bool IsInferencePath(std::string_view path);

// Times a relayed SSE stream from its bytes as they pass: each "data:" event after the first
// is one output token's worth (vLLM and the OpenAI API send one event per token or chunk).
// Events split across reads are counted once.
class SseClock {
 public:
  // `bytes` just relayed at `at_seconds` since the request arrived.
  void Observe(std::string_view bytes, double at_seconds);
  // Mean gap between content events after the first; nullopt with fewer than two events.
  std::optional<double> MeanGapSeconds() const;
  int events() const { return events_; }

 private:
  int events_ = 0;
  double first_ = 0, last_ = 0;
  bool seen_bytes_ = false;
  std::string tail_;  // the last bytes of the previous read ("data:" split across reads)
};

}  // namespace gpuscale::gateway
