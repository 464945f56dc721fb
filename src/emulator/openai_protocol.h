// The OpenAI-compatible wire format the emulator speaks: request bodies of
// /v1/completions and /v1/chat/completions reduced to what the timing model needs, and the
// response bodies, server-sent-event chunks, model list and error bodies it returns
// (the shapes vLLM's OpenAI server uses). JSON stays inside openai_protocol.cc.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpuscale::emulator {

enum class Endpoint { kCompletions, kChatCompletions };

// Most choices one request may ask for (prompts x n); vLLM has no cap but its batch size.
inline constexpr int32_t kMaxChoices = 128;

// vLLM's `kv_transfer_params` of a disaggregated request (its NIXL/P2P connectors and their
// toy proxy): the client asks a prefill replica with do_remote_decode (the KV will be read
// by a decode replica); the prefill replica answers with do_remote_prefill and where the KV
// lies (engine id, host, port, block ids); the client passes that on to a decode replica.
// `prompt_tokens` is gpuscale's addition: the tokens whose KV the handle holds, which the
// emulated transfer time grows with.
struct KvTransferParams {
  bool do_remote_decode = false;
  bool do_remote_prefill = false;
  std::string remote_engine_id = {};
  std::string remote_host = {};
  int32_t remote_port = 0;
  std::vector<int64_t> remote_block_ids = {};
  int32_t prompt_tokens = 0;
};

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  // empty when the body names none
  // Prompt tokens of each prompt (whitespace words, at least 1): one for chat and for a
  // completions `prompt` that is a string or a list of token ids; one per entry of a list of
  // strings or of token-id lists.
  std::vector<int32_t> prompts{1};
  // The text of each prompt, parallel to `prompts`, for the prefix cache's block keys
  // (route/prompt_blocks.h): a string as given, token ids as decimal words, the messages'
  // contents one after another; empty when only the prompt_tokens hint gave the length.
  std::vector<std::string> prompt_texts{std::string()};
  // The output limit; nullopt when the body names none (vLLM then allows up to the context
  // length, not OpenAI's 16).
  std::optional<int32_t> max_tokens;
  int32_t n = 1;            // choices per prompt
  bool ignore_eos = false;  // vLLM's: run to max_tokens even past the model's natural end
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a final usage chunk
  // stream_options.continuous_usage_stats (vLLM's): usage so far on every token chunk too.
  bool continuous_usage = false;
  // `kv_transfer_params` when the body has an object there (null or absent: nullopt).
  std::optional<KvTransferParams> kv_transfer = {};

  // prompts x n.
  int32_t Choices() const { return static_cast<int32_t>(prompts.size()) * n; }
  // The prompt tokens of choice `index` (choices run prompt by prompt, n per prompt).
  int32_t PromptOfChoice(int32_t index) const { return prompts[static_cast<size_t>(index / n)]; }
  const std::string& PromptTextOfChoice(int32_t index) const {
    return prompt_texts[static_cast<size_t>(index / n)];
  }
  // Usage's prompt_tokens: every prompt once, however many choices each has (as vLLM counts).
  int64_t TotalPromptTokens() const;
};

// Parses a request body. Prompt tokens: the `prompt_tokens` integer when given (a gpuscale
// hint for exact lengths, applied to every prompt; alone, it stands for one prompt), else the whitespace-separated words of
// each `prompt` (a string, a list of strings, a list of token ids or a list of such lists)
// or of the messages' `content` (a string or an array of {type:"text", text} parts). Output
// limit: `max_tokens` (chat also accepts `max_completion_tokens`). Errors: InvalidArgument
// whose field is the JSON key at fault (e.g. "max_tokens": "expected an integer in [1, ...]")
// or "body" when it is not a JSON object; "n" past kMaxChoices choices in all.
Result<CompletionRequest> ParseCompletionRequest(std::string_view body, Endpoint endpoint);

// Whitespace-separated words in `text`.
int32_t CountWords(std::string_view text);

// The text of emulated output token `index` (a leading space and a word from a fixed list),
// so that clients can count one token per streamed chunk.
std::string_view TokenText(int32_t index);

// What every chunk and response of one request repeats.
struct ResponseHeader {
  std::string id;  // "cmpl-<n>" or "chatcmpl-<n>"
  int64_t created_unix_seconds = 0;
  std::string model;
  Endpoint endpoint = Endpoint::kCompletions;
};

// How a choice ended: the emulated model's natural end ("stop") or the output limit
// ("length"); kNotYet on every token but a choice's last.
enum class Finish { kNotYet, kStop, kLength };

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// The chat stream's first event of choice `choice`, as vLLM sends it: the assistant role with
// empty content (clients that count content chunks do not count it), sent with its first
// token.
std::string StreamRoleEvent(const ResponseHeader& header, int32_t choice);
// One SSE event ("data: {...}\n\n") carrying output token `token` of choice `choice`, with
// `finish` as its finish_reason (null for kNotYet); with `usage` so far when given (vLLM's
// continuous_usage_stats).
std::string StreamTokenEvent(const ResponseHeader& header, int32_t choice, int32_t token,
                             Finish finish, const std::optional<Usage>& usage = std::nullopt);
// The usage event sent after the last token when include_usage is set (empty choices).
std::string StreamUsageEvent(const ResponseHeader& header, const Usage& usage);
// The stream terminator "data: [DONE]\n\n".
std::string_view StreamDoneEvent();

// One choice of a whole response: its output length and how it ended.
struct ChoiceResult {
  int32_t completion_tokens = 0;
  Finish finish = Finish::kLength;
};

// The whole (non-streaming) response: one choice per entry of `choices` (its index is the
// position) with that many tokens of text, and usage over all of them; with a top-level
// `kv_transfer_params` (vLLM's place for it) when `kv_transfer` is given.
std::string CompletionResponseBody(const ResponseHeader& header,
                                   const std::vector<ChoiceResult>& choices, int64_t prompt_tokens,
                                   const std::optional<KvTransferParams>& kv_transfer = {});

// {"object":"list","data":[{"id":model,"object":"model",...,"max_model_len":n}]}.
std::string ModelListBody(std::string_view model, int64_t created_unix_seconds,
                          int64_t max_model_len);

// GET /v1/models/{model}: the one entry of ModelListBody.
std::string ModelBody(std::string_view model, int64_t created_unix_seconds,
                      int64_t max_model_len);

// POST /tokenize (vLLM's): the prompt tokens of a `prompt` or `messages` body, counted as
// completions count them. Errors: InvalidArgument naming the field.
Result<int64_t> TokenizeCount(std::string_view body);
// {"count": n, "max_model_len": L, "tokens": [n stand-in ids], "token_strs": null}.
std::string TokenizeBody(int64_t count, int64_t max_model_len);

// POST /v1/embeddings (OpenAI's API; vLLM serves it for embedding models). The emulated
// model embeds into kEmbeddingDimensions floats: a unit vector drawn from a hash of the input
// (its text, or its token ids), so the same input always gets the same vector and different
// inputs almost surely different ones.
inline constexpr int32_t kEmbeddingDimensions = 384;
// Most inputs one request may hold (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingInput {
  std::string key;            // what the vector is drawn from: the text, or "tokens:1,2,3"
  int64_t prompt_tokens = 1;  // whitespace words of a text (at least 1), or token ids
};

struct EmbeddingRequest {
  std::string model;  // empty when the body names none
  std::vector<EmbeddingInput> inputs;
  int32_t dimensions = kEmbeddingDimensions;  // OpenAI's `dimensions`: the first n, renormalized
  bool base64 = false;  // encoding_format "base64": little-endian float32s, base64 (the openai
                        // clients' default)
};

// Parses an embeddings body: `input` is a string, an array of strings, an array of token ids
// (one input) or an array of token-id arrays; optional `model`, `dimensions` (1 ..
// kEmbeddingDimensions) and `encoding_format` ("float" or "base64"). Errors: InvalidArgument
// whose field names the key at fault ("input", "input[2]", "dimensions", "encoding_format") or
// "body" when it is not a JSON object.
Result<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body);

// The emulated embedding of `key`: `dimensions` floats of unit length (deterministic).
std::vector<float> EmulatedEmbedding(std::string_view key, int32_t dimensions);

// {"id","object":"list","created","model","data":[{"object":"embedding","index":i,
// "embedding":[...] or "<base64>"}],"usage":{"prompt_tokens":n,"total_tokens":n}}.
std::string EmbeddingResponseBody(const EmbeddingRequest& request, std::string_view id,
                                  int64_t created_unix_seconds, std::string_view model);

// OpenAI's error shape: {"error":{"message","type","param","code"}}; `param` null when empty.
std::string ErrorBody(std::string_view message, std::string_view type, std::string_view param,
                      int http_status);

}  // namespace gpuscale::emulator
