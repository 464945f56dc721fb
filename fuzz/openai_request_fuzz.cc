// Fuzzes the gateway's request-body scanner (gateway/request_scanner.h), the first thing the
// gateway does with a client's bytes, and checks it against nlohmann's tree on every input:
// the scanner must accept exactly the bodies nlohmann parses as an object (nesting past
// kMaxDepth and a NUL byte after the object aside) and read the same model, stream and prompt
// prefix from them. The tree side below is the reading the gateway did before the scanner (kept
// here as the reference).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gateway/request_scanner.h"

namespace {

using gpuscale::gateway::ScannedRequest;
using nlohmann::json;

// `separator` (a chat message's: '\n', as gpuscale emulate joins messages) follows each
// string and each text part, while the limit leaves room for it.
void AppendContent(const json& content, std::string& out, size_t limit, char separator = '\0') {
  if (content.is_string()) {
    out += content.get_ref<const std::string&>().substr(0, limit - std::min(limit, out.size()));
    if (separator != '\0' && out.size() < limit) out += separator;
  } else if (content.is_array()) {
    for (const json& part : content) {
      if (out.size() >= limit) return;
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        AppendContent(part["text"], out, limit, separator);
      }
    }
  }
}

std::string ReferencePrefix(const json& body, size_t limit) {
  std::string out;
  if (auto it = body.find("prompt"); it != body.end()) {
    AppendContent(it->is_array() && !it->empty() ? (*it)[0] : *it, out, limit);
  } else if (auto m = body.find("messages"); m != body.end() && m->is_array()) {
    for (const json& message : *m) {
      if (out.size() >= limit) break;
      if (message.is_object() && message.contains("content")) {
        AppendContent(message["content"], out, limit, '\n');
      }
    }
  } else if (auto in = body.find("input"); in != body.end()) {
    AppendContent(in->is_array() && !in->empty() ? (*in)[0] : *in, out, limit);
  }
  return out;
}

// Deeper than the scanner's limit (the tree has none): the scanner may refuse.
bool TooDeep(std::string_view s) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest > gpuscale::gateway::kMaxDepth;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t limit = 1 + data[0] % 64;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const ScannedRequest scanned = gpuscale::gateway::ScanRequest(body, limit);
  const json tree = json::parse(body, nullptr, /*allow_exceptions=*/false);
  const bool tree_ok = !tree.is_discarded() && tree.is_object();
  if (scanned.ok != tree_ok) {
    if (!scanned.ok && TooDeep(body)) return 0;
    // nlohmann takes a NUL byte outside a string as the end of the input and ignores what
    // follows; JSON has no such rule, and the scanner refuses the body.
    if (!scanned.ok && body.find('\0') != std::string_view::npos) return 0;
    std::abort();  // accepted by one reader and refused by the other
  }
  if (!tree_ok) return 0;
  auto model = tree.find("model");
  if (scanned.has_model != (model != tree.end())) std::abort();
  if (scanned.has_model) {
    if (scanned.model_is_string != model->is_string()) std::abort();
    if (scanned.model_is_string && scanned.model != model->get_ref<const std::string&>()) {
      std::abort();
    }
  }
  auto stream = tree.find("stream");
  if (scanned.has_stream != (stream != tree.end())) std::abort();
  if (scanned.has_stream) {
    using V = ScannedRequest::StreamValue;
    const V expected = stream->is_null()       ? V::kNull
                       : !stream->is_boolean() ? V::kOther
                       : stream->get<bool>()   ? V::kTrue
                                               : V::kFalse;
    if (scanned.stream != expected) std::abort();
  }
  if (scanned.prefix != ReferencePrefix(tree, limit)) std::abort();
  return 0;
}
