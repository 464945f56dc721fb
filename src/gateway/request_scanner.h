// Reads the few fields of an OpenAI request body that route it (`model`, `stream` and the
// prompt's first characters) in one pass over the bytes, validating the whole body as JSON
// (RFC 8259: grammar, escapes, UTF-8) without building a tree.
//
// Why not nlohmann::json::parse, which the project uses everywhere else: building the tree
// copies every string and allocates a node per value, 18 us for a 4 KiB chat request and
// 260 us for 64 KiB (bench/gateway_parse_bench), most of the gateway's CPU per request at
// real prompt lengths; this scanner skips the prompt's bytes it does not keep. It accepts
// and reads exactly what the tree would (fuzz/openai_request_fuzz.cc checks it against
// nlohmann on every input), except bodies nested deeper than kMaxDepth and bytes after a NUL
// byte (nlohmann stops reading at a NUL outside a string), which it refuses.
//
// Pure; thread-compatible.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuscale::gateway {

struct ScannedRequest {
  bool ok = false;         // the body is one JSON object (else `error` says why)
  std::string error;       // "invalid JSON at byte 17", "the body is not a JSON object", ...
  bool has_model = false;  // the last "model" member
  bool model_is_string = false;
  std::string model;
  bool has_stream = false;  // the last "stream" member
  enum class StreamValue { kNull, kTrue, kFalse, kOther } stream = StreamValue::kNull;
  std::string prefix;  // the prompt's first `prefix_chars` bytes (see ScanRequest)
};

inline constexpr int kMaxDepth = 512;

// The prefix is, as OpenAI's request kinds put the prompt: the last `prompt` member when there
// is one (a string, or the first element of an array: a string or an array of parts whose
// "text" strings count), else the last `messages` member when it is an array (each message's
// last `content`: a string or an array of parts, concatenated), else the last `input` member
// (as `prompt`); at most `prefix_chars` bytes of the unescaped UTF-8.
ScannedRequest ScanRequest(std::string_view body, size_t prefix_chars);

}  // namespace gpuscale::gateway
