// The OpenAI-compatible wire format the emulator speaks: request bodies of
// /v1/completions and /v1/chat/completions reduced to what the timing model needs, and the
// response bodies, server-sent-event chunks, model list and error bodies it returns
// (the shapes vLLM's OpenAI server uses). JSON stays inside openai_protocol.cc.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuscale::emulator {

enum class Endpoint { kCompletions, kChatCompletions };

// Default output length when a request names no max_tokens (vLLM's completions default).
inline constexpr int32_t kDefaultMaxTokens = 16;

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;          // empty when the body names none
  int32_t prompt_tokens = 1;  // whitespace words of the prompt/messages, at least 1
  int32_t max_tokens = kDefaultMaxTokens;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a final usage chunk
  // stream_options.continuous_usage_stats (vLLM's): usage so far on every token chunk too.
  bool continuous_usage = false;
};

// Parses a request body. Prompt tokens: the `prompt_tokens` integer when given (a gpuscale
// hint for exact lengths), else the whitespace-separated words of `prompt` (a string or an
// array of strings) or of the messages' `content` (a string or an array of {type:"text",
// text} parts). Output length: `max_tokens` (chat also accepts `max_completion_tokens`).
// Errors: InvalidArgument whose field is the JSON key at fault (e.g. "max_tokens": "expected
// an integer >= 1") or "body" when it is not a JSON object; "n" when n != 1.
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

// The chat stream's first event, as vLLM sends it: the assistant role with empty content
// (clients that count content chunks do not count it), sent with the first token.
std::string StreamRoleEvent(const ResponseHeader& header);
// One SSE event ("data: {...}\n\n") carrying output token `index`; finish_reason "length" on
// the last token, else null.
std::string StreamTokenEvent(const ResponseHeader& header, int32_t index, bool last);
// The same with `usage` so far (prompt_tokens, index + 1 completion tokens), for
// continuous_usage_stats.
std::string StreamTokenEventWithUsage(const ResponseHeader& header, int32_t index, bool last,
                                      int32_t prompt_tokens);
// The usage event sent after the last token when include_usage is set (empty choices).
std::string StreamUsageEvent(const ResponseHeader& header, int32_t prompt_tokens,
                             int32_t completion_tokens);
// The stream terminator "data: [DONE]\n\n".
std::string_view StreamDoneEvent();

// The whole (non-streaming) response with `completion_tokens` tokens of text and usage.
std::string CompletionResponseBody(const ResponseHeader& header, int32_t prompt_tokens,
                                   int32_t completion_tokens);

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

// OpenAI's error shape: {"error":{"message","type","param","code"}}; `param` null when empty.
std::string ErrorBody(std::string_view message, std::string_view type, std::string_view param,
                      int http_status);

}  // namespace gpuscale::emulator
