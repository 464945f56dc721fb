#include "emulator/openai_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace gpuscale::emulator {
namespace {

using json = nlohmann::ordered_json;

// Common English words: real tokenizers map each to one token, so the emulated text has
// about as many tokens for a real tokenizer as the emulator counts.
constexpr std::array<std::string_view, 16> kWords = {
    " the", " model", " is", " emulated", " and", " every", " word", " is",
    " one", " token", " of", " output",   " for", " the",   " load", " test"};

// Serialises without throwing: invalid UTF-8 echoed from a request becomes U+FFFD.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// An optional integer field in [1, max]; nullopt when absent or null.
Result<std::optional<int64_t>> ReadPositiveInt(const json& body, const char* key, int64_t max) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::optional<int64_t>{};
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > max) {
    return InvalidArgument(fmt::format("expected an integer in [1, {}], got {}", max, Dump(*it)),
                           key);
  }
  return std::optional<int64_t>{it->get<int64_t>()};
}

Result<bool> ReadBool(const json& object, const char* key, const std::string& field) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) return InvalidArgument("expected true or false", field);
  return it->get<bool>();
}

// Words of a completions `prompt`: a string, strings, or token ids (counted one each).
Result<int64_t> PromptTokens(const json& body) {
  auto it = body.find("prompt");
  if (it == body.end()) return InvalidArgument("required: a string or an array", "prompt");
  if (it->is_string()) return CountWords(it->get_ref<const std::string&>());
  if (!it->is_array()) return InvalidArgument("expected a string or an array", "prompt");
  int64_t tokens = 0;
  for (const json& part : *it) {
    if (part.is_string()) {
      tokens += CountWords(part.get_ref<const std::string&>());
    } else if (part.is_number_integer()) {
      ++tokens;  // a token id
    } else {
      return InvalidArgument("expected strings or token ids", "prompt");
    }
  }
  return tokens;
}

// Words of the chat messages' contents (strings or arrays of text parts).
Result<int64_t> MessageTokens(const json& body) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array()) {
    return InvalidArgument("required: an array of {role, content} objects", "messages");
  }
  int64_t tokens = 0;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& message = (*it)[i];
    const std::string field = fmt::format("messages[{}].content", i);
    if (!message.is_object()) return InvalidArgument("expected an object", field);
    auto content = message.find("content");
    if (content == message.end() || content->is_null()) continue;
    if (content->is_string()) {
      tokens += CountWords(content->get_ref<const std::string&>());
      continue;
    }
    if (!content->is_array()) return InvalidArgument("expected a string or an array", field);
    for (const json& part : *content) {
      auto text = part.is_object() ? part.find("text") : part.end();
      if (text != part.end() && text->is_string()) {
        tokens += CountWords(text->get_ref<const std::string&>());
      }
    }
  }
  return tokens;
}

// Reads the request's options other than the prompt.
Status ReadOptions(const json& body, CompletionRequest& request) {
  auto model = body.find("model");
  if (model != body.end() && !model->is_null()) {
    if (!model->is_string()) return InvalidArgument("expected a string", "model");
    request.model = model->get<std::string>();
  }
  constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max() / 2;
  GS_ASSIGN_OR_RETURN(std::optional<int64_t> max_tokens,
                      ReadPositiveInt(body, "max_tokens", kMaxTokens));
  if (!max_tokens && request.endpoint == Endpoint::kChatCompletions) {
    GS_ASSIGN_OR_RETURN(max_tokens, ReadPositiveInt(body, "max_completion_tokens", kMaxTokens));
  }
  if (max_tokens) request.max_tokens = static_cast<int32_t>(*max_tokens);
  auto n = body.find("n");
  if (n != body.end() && !n->is_null() && *n != 1) {
    return InvalidArgument(fmt::format("only n = 1 is emulated, got {}", Dump(*n)), "n");
  }
  GS_ASSIGN_OR_RETURN(request.stream, ReadBool(body, "stream", "stream"));
  auto options = body.find("stream_options");
  if (options != body.end() && options->is_object()) {
    GS_ASSIGN_OR_RETURN(request.include_usage,
                        ReadBool(*options, "include_usage", "stream_options.include_usage"));
    GS_ASSIGN_OR_RETURN(request.continuous_usage,
                        ReadBool(*options, "continuous_usage_stats",
                                 "stream_options.continuous_usage_stats"));
  }
  return OkStatus();
}

json UsageJson(int32_t prompt_tokens, int32_t completion_tokens) {
  return json{{"prompt_tokens", prompt_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"completion_tokens", completion_tokens}};
}

json ChunkHeader(const ResponseHeader& header) {
  const bool chat = header.endpoint == Endpoint::kChatCompletions;
  return json{{"id", header.id},
              {"object", chat ? "chat.completion.chunk" : "text_completion"},
              {"created", header.created_unix_seconds},
              {"model", header.model}};
}

std::string Event(const json& payload) { return fmt::format("data: {}\n\n", Dump(payload)); }

}  // namespace

int32_t CountWords(std::string_view text) {
  int32_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

Result<CompletionRequest> ParseCompletionRequest(std::string_view body, Endpoint endpoint) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return InvalidArgument("expected a JSON object", "body");
  CompletionRequest request;
  request.endpoint = endpoint;
  GS_RETURN_IF_ERROR(ReadOptions(parsed, request));
  GS_ASSIGN_OR_RETURN(
      std::optional<int64_t> hint,
      ReadPositiveInt(parsed, "prompt_tokens", std::numeric_limits<int32_t>::max() / 2));
  int64_t tokens = 0;
  if (hint) {
    tokens = *hint;
  } else if (endpoint == Endpoint::kCompletions) {
    GS_ASSIGN_OR_RETURN(tokens, PromptTokens(parsed));
  } else {
    GS_ASSIGN_OR_RETURN(tokens, MessageTokens(parsed));
  }
  // An empty prompt still costs one token (the BOS token a real tokenizer adds).
  request.prompt_tokens =
      static_cast<int32_t>(std::clamp<int64_t>(tokens, 1, std::numeric_limits<int32_t>::max() / 2));
  return request;
}

std::string_view TokenText(int32_t index) {
  return kWords[static_cast<size_t>(index) % kWords.size()];
}

namespace {

// One output token as a chunk object (StreamTokenEvent's payload).
json TokenChunk(const ResponseHeader& header, int32_t index, bool last) {
  json chunk = ChunkHeader(header);
  json choice{{"index", 0}};
  if (header.endpoint == Endpoint::kChatCompletions) {
    choice["delta"] = json{{"content", TokenText(index)}};
  } else {
    choice["text"] = TokenText(index);
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = last ? json("length") : json(nullptr);
  chunk["choices"] = json::array({std::move(choice)});
  return chunk;
}

}  // namespace

std::string StreamRoleEvent(const ResponseHeader& header) {
  json chunk = ChunkHeader(header);
  json choice{{"index", 0},
              {"delta", {{"role", "assistant"}, {"content", ""}}},
              {"logprobs", nullptr},
              {"finish_reason", nullptr}};
  chunk["choices"] = json::array({std::move(choice)});
  return Event(chunk);
}

std::string StreamTokenEvent(const ResponseHeader& header, int32_t index, bool last) {
  return Event(TokenChunk(header, index, last));
}

std::string StreamTokenEventWithUsage(const ResponseHeader& header, int32_t index, bool last,
                                      int32_t prompt_tokens) {
  json chunk = TokenChunk(header, index, last);
  chunk["usage"] = UsageJson(prompt_tokens, index + 1);
  return Event(chunk);
}

std::string StreamUsageEvent(const ResponseHeader& header, int32_t prompt_tokens,
                             int32_t completion_tokens) {
  json chunk = ChunkHeader(header);
  chunk["choices"] = json::array();
  chunk["usage"] = UsageJson(prompt_tokens, completion_tokens);
  return Event(chunk);
}

std::string_view StreamDoneEvent() { return "data: [DONE]\n\n"; }

std::string CompletionResponseBody(const ResponseHeader& header, int32_t prompt_tokens,
                                   int32_t completion_tokens) {
  std::string text;
  for (int32_t i = 0; i < completion_tokens; ++i) text += TokenText(i);
  const bool chat = header.endpoint == Endpoint::kChatCompletions;
  json choice{{"index", 0}};
  if (chat) {
    choice["message"] = json{{"role", "assistant"}, {"content", std::move(text)}};
  } else {
    choice["text"] = std::move(text);
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = "length";
  json body{{"id", header.id},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"created", header.created_unix_seconds},
            {"model", header.model},
            {"choices", json::array({std::move(choice)})},
            {"usage", UsageJson(prompt_tokens, completion_tokens)}};
  return Dump(body);
}

std::string ModelListBody(std::string_view model, int64_t created_unix_seconds,
                          int64_t max_model_len) {
  json entry{{"id", model},
             {"object", "model"},
             {"created", created_unix_seconds},
             {"owned_by", "gpuscale"},
             {"root", model},
             {"max_model_len", max_model_len}};
  return Dump(json{{"object", "list"}, {"data", json::array({std::move(entry)})}});
}

std::string ModelBody(std::string_view model, int64_t created_unix_seconds,
                      int64_t max_model_len) {
  return json::parse(ModelListBody(model, created_unix_seconds, max_model_len))["data"][0]
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<int64_t> TokenizeCount(std::string_view body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return InvalidArgument("expected a JSON object", "body");
  if (parsed.contains("messages")) return MessageTokens(parsed);
  if (parsed.contains("prompt")) return PromptTokens(parsed);
  return InvalidArgument("expected `prompt` (text) or `messages` (a chat)", "prompt");
}

std::string TokenizeBody(int64_t count, int64_t max_model_len) {
  json tokens = json::array();
  for (int64_t i = 0; i < count; ++i) tokens.push_back(1000 + i % 30000);  // stand-in ids
  return Dump(json{{"count", count},
                   {"max_model_len", max_model_len},
                   {"tokens", std::move(tokens)},
                   {"token_strs", nullptr}});
}

std::string ErrorBody(std::string_view message, std::string_view type, std::string_view param,
                      int http_status) {
  json error{{"message", message},
             {"type", type},
             {"param", param.empty() ? json(nullptr) : json(param)},
             {"code", http_status}};
  return Dump(json{{"error", std::move(error)}});
}

}  // namespace gpuscale::emulator
