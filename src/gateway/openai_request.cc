#include "gateway/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "gateway/request_scanner.h"
#include "route/picker.h"
#include "route/prompt_blocks.h"

namespace gpuscale::gateway {
namespace {

using nlohmann::json;

}  // namespace

Result<InferenceRequest> ParseInferenceRequest(std::string_view body, int prefix_chars,
                                               int block_tokens) {
  const size_t prefix = static_cast<size_t>(std::max(prefix_chars, 1));
  // The whole prompt when its blocks are wanted (its text is no longer than the body).
  ScannedRequest scanned =
      ScanRequest(body, block_tokens > 0 ? std::max(prefix, body.size()) : prefix);
  if (!scanned.ok) {
    return InvalidArgument(fmt::format("the request body is not a JSON object: {}", scanned.error),
                           "body");
  }
  if (!scanned.has_model || !scanned.model_is_string || scanned.model.empty()) {
    return InvalidArgument("'model' is required: the name of a served model (GET /v1/models)",
                           "model");
  }
  InferenceRequest r;
  r.model = std::move(scanned.model);
  if (scanned.has_stream && scanned.stream != ScannedRequest::StreamValue::kNull) {
    if (scanned.stream == ScannedRequest::StreamValue::kOther) {
      return InvalidArgument("'stream' must be true or false", "stream");
    }
    r.stream = scanned.stream == ScannedRequest::StreamValue::kTrue;
  }
  r.prefix_key = route::HashText(std::string_view(scanned.prefix).substr(0, prefix));
  if (block_tokens > 0) {
    auto keys = std::make_shared<std::vector<uint64_t>>();
    r.prompt_tokens = route::PromptBlockKeys(scanned.prefix, block_tokens, keys.get());
    r.prompt_blocks = std::move(keys);
  }
  return r;
}

std::string OpenAiErrorBody(std::string_view message, std::string_view type,
                            std::string_view param, std::string_view code) {
  json error = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) error["param"] = param;
  if (!code.empty()) error["code"] = code;
  return json{{"error", error}}.dump();
}

namespace {

json ModelJson(const std::string& model, const std::string& service) {
  return {{"id", model}, {"object", "model"}, {"created", 0}, {"owned_by", service}};
}

}  // namespace

std::string ModelListBody(const std::vector<std::pair<std::string, std::string>>& models) {
  json data = json::array();
  for (const auto& [model, service] : models) data.push_back(ModelJson(model, service));
  return json{{"object", "list"}, {"data", data}}.dump();
}

std::string ModelBody(const std::string& model, const std::string& service) {
  return ModelJson(model, service).dump();
}

bool BearerMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  }
  const std::string_view given = authorization.substr(kScheme.size());
  // Constant time in the token's content (its length is not secret).
  unsigned char diff = given.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < token.size(); ++i) {
    diff |= static_cast<unsigned char>(token[i] ^ (i < given.size() ? given[i] : 0));
  }
  return diff == 0;
}

bool IsInferencePath(std::string_view path) {
  return path == "/v1/chat/completions" || path == "/v1/completions" ||
         path == "/v1/embeddings";
}

void SseClock::Observe(std::string_view bytes, double at_seconds) {
  if (bytes.empty()) return;
  const bool stream_start = !seen_bytes_;
  seen_bytes_ = true;
  std::string window = tail_;
  window.append(bytes);
  const size_t old = tail_.size();
  auto count = [&](size_t begin) {
    // An event is "data:" at the start of a line; [DONE] closes the stream and is no token.
    const std::string_view rest = std::string_view(window).substr(begin + 5);
    const std::string_view trimmed = rest.substr(rest.starts_with(' ') ? 1 : 0);
    if (trimmed.starts_with("[DONE]")) return;
    if (events_++ == 0) first_ = at_seconds;
    last_ = at_seconds;
  };
  if (stream_start && window.starts_with("data:")) count(0);
  for (size_t pos = window.find("\ndata:"); pos != std::string::npos;
       pos = window.find("\ndata:", pos + 1)) {
    if (pos + 6 > old) count(pos + 1);  // matches inside the old tail were counted before
  }
  tail_ = window.substr(window.size() - std::min<size_t>(window.size(), 16));
}

std::optional<double> SseClock::MeanGapSeconds() const {
  if (events_ < 2) return std::nullopt;
  return (last_ - first_) / (events_ - 1);
}

}  // namespace gpuscale::gateway
