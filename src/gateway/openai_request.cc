#include "gateway/openai_request.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "route/picker.h"

namespace gpuscale::gateway {
namespace {

using nlohmann::json;

// Appends the string contents of an OpenAI message `content` (a string, or an array of
// parts with "text") to `out` until it holds `limit` characters.
void AppendContent(const json& content, std::string& out, size_t limit) {
  if (content.is_string()) {
    out += content.get_ref<const std::string&>().substr(0, limit - std::min(limit, out.size()));
  } else if (content.is_array()) {
    for (const json& part : content) {
      if (out.size() >= limit) return;
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        AppendContent(part["text"], out, limit);
      }
    }
  }
}

std::string PrefixText(const json& body, size_t limit) {
  std::string out;
  if (auto it = body.find("prompt"); it != body.end()) {
    if (it->is_array() && !it->empty()) {
      AppendContent((*it)[0], out, limit);
    } else {
      AppendContent(*it, out, limit);
    }
  } else if (auto m = body.find("messages"); m != body.end() && m->is_array()) {
    for (const json& message : *m) {
      if (out.size() >= limit) break;
      if (message.is_object() && message.contains("content")) {
        AppendContent(message["content"], out, limit);
      }
    }
  } else if (auto in = body.find("input"); in != body.end()) {
    AppendContent(in->is_array() && !in->empty() ? (*in)[0] : *in, out, limit);
  }
  return out;
}

}  // namespace

Result<InferenceRequest> ParseInferenceRequest(std::string_view body, int prefix_chars) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("the request body is not a JSON object", "body");
  }
  InferenceRequest r;
  auto model = j.find("model");
  if (model == j.end() || !model->is_string() || model->get_ref<const std::string&>().empty()) {
    return InvalidArgument("'model' is required: the name of a served model (GET /v1/models)",
                           "model");
  }
  r.model = model->get<std::string>();
  if (auto stream = j.find("stream"); stream != j.end() && !stream->is_null()) {
    if (!stream->is_boolean()) return InvalidArgument("'stream' must be true or false", "stream");
    r.stream = stream->get<bool>();
  }
  r.prefix_key = route::HashText(PrefixText(j, static_cast<size_t>(std::max(prefix_chars, 1))));
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
