#include "emulator/openai_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace gpuscale::emulator {
namespace {

using ojson = nlohmann::ordered_json;

// Common English words: real tokenizers map each to one token, so the emulated text has
// about as many tokens for a real tokenizer as the emulator counts.
constexpr std::array<std::string_view, 16> kWords = {
    " the", " model", " is", " emulated", " and", " every", " word", " is",
    " one", " token", " of", " output",   " for", " the",   " load", " test"};

// Serialises without throwing: invalid UTF-8 echoed from a request becomes U+FFFD.
std::string Dump(const ojson& value) {
  return value.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

// An optional integer field in [1, max]; nullopt when absent or null.
Result<std::optional<int64_t>> ReadPositiveInt(const ojson& body, const char* key, int64_t max) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::optional<int64_t>{};
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > max) {
    return InvalidArgument(fmt::format("expected an integer in [1, {}], got {}", max, Dump(*it)),
                           key);
  }
  return std::optional<int64_t>{it->get<int64_t>()};
}

Result<bool> ReadBool(const ojson& object, const char* key, const std::string& field) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) return InvalidArgument("expected true or false", field);
  return it->get<bool>();
}

// An optional string field; empty when absent or null.
Result<std::string> ReadString(const ojson& object, const char* key, const std::string& field) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return InvalidArgument("expected a string", field);
  return it->get<std::string>();
}

// Prompt tokens of one entry of a completions `prompt` list: a string's words, or a list of
// token ids (one token each); its text goes to `texts`. nullopt when the entry is neither.
std::optional<int64_t> PromptEntryTokens(const ojson& entry, std::vector<std::string>* texts) {
  if (entry.is_string()) {
    texts->push_back(entry.get<std::string>());
    return CountWords(texts->back());
  }
  if (!entry.is_array()) return std::nullopt;
  std::string text;
  for (const ojson& id : entry) {
    if (!id.is_number_integer()) return std::nullopt;
    text += fmt::format("{} ", id.get<int64_t>());
  }
  texts->push_back(std::move(text));
  return static_cast<int64_t>(entry.size());
}

// The prompts of a completions body, as OpenAI and vLLM read `prompt`: a string, a list of
// token ids (one prompt), or a list of strings or token-id lists (one prompt each).
Result<std::vector<int64_t>> Prompts(const ojson& body, std::vector<std::string>* texts) {
  auto it = body.find("prompt");
  if (it == body.end()) return InvalidArgument("required: a string or an array", "prompt");
  if (it->is_string()) {
    texts->push_back(it->get<std::string>());
    return std::vector<int64_t>{CountWords(texts->back())};
  }
  if (!it->is_array()) return InvalidArgument("expected a string or an array", "prompt");
  if (it->empty()) return InvalidArgument("expected at least one prompt", "prompt");
  if ((*it)[0].is_number_integer()) {  // one prompt of token ids: [1, 2, 3]
    std::optional<int64_t> ids = PromptEntryTokens(*it, texts);
    if (!ids) return InvalidArgument("expected token ids (integers) only", "prompt");
    return std::vector<int64_t>{*ids};
  }
  std::vector<int64_t> prompts;
  for (size_t i = 0; i < it->size(); ++i) {
    std::optional<int64_t> tokens = PromptEntryTokens((*it)[i], texts);
    if (!tokens) {
      return InvalidArgument("expected a string or a list of token ids",
                             fmt::format("prompt[{}]", i));
    }
    prompts.push_back(*tokens);
  }
  return prompts;
}

// Words of the chat messages' contents (strings or arrays of text parts), whose text goes
// to `text`.
Result<int64_t> MessageTokens(const ojson& body, std::string* text) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array()) {
    return InvalidArgument("required: an array of {role, content} objects", "messages");
  }
  int64_t tokens = 0;
  for (size_t i = 0; i < it->size(); ++i) {
    const ojson& message = (*it)[i];
    const std::string field = fmt::format("messages[{}].content", i);
    if (!message.is_object()) return InvalidArgument("expected an object", field);
    auto content = message.find("content");
    if (content == message.end() || content->is_null()) continue;
    if (content->is_string()) {
      (*text += content->get_ref<const std::string&>()) += '\n';
      tokens += CountWords(content->get_ref<const std::string&>());
      continue;
    }
    if (!content->is_array()) return InvalidArgument("expected a string or an array", field);
    for (const ojson& part : *content) {
      auto text_part = part.is_object() ? part.find("text") : part.end();
      if (text_part != part.end() && text_part->is_string()) {
        (*text += text_part->get_ref<const std::string&>()) += '\n';
        tokens += CountWords(text_part->get_ref<const std::string&>());
      }
    }
  }
  return tokens;
}

// `kv_transfer_params` (KvTransferParams): flags and the handle's fields, each optional.
Result<std::optional<KvTransferParams>> ReadKvTransfer(const ojson& body) {
  constexpr const char* kField = "kv_transfer_params";
  auto it = body.find(kField);
  if (it == body.end() || it->is_null()) return std::optional<KvTransferParams>{};
  if (!it->is_object()) return InvalidArgument("expected an object", kField);
  KvTransferParams p;
  GS_ASSIGN_OR_RETURN(p.do_remote_decode,
                      ReadBool(*it, "do_remote_decode", "kv_transfer_params.do_remote_decode"));
  GS_ASSIGN_OR_RETURN(p.do_remote_prefill,
                      ReadBool(*it, "do_remote_prefill", "kv_transfer_params.do_remote_prefill"));
  GS_ASSIGN_OR_RETURN(p.remote_engine_id,
                      ReadString(*it, "remote_engine_id", "kv_transfer_params.remote_engine_id"));
  GS_ASSIGN_OR_RETURN(p.remote_host,
                      ReadString(*it, "remote_host", "kv_transfer_params.remote_host"));
  GS_ASSIGN_OR_RETURN(std::optional<int64_t> port, ReadPositiveInt(*it, "remote_port", 65535));
  p.remote_port = static_cast<int32_t>(port.value_or(0));
  GS_ASSIGN_OR_RETURN(
      std::optional<int64_t> prompt,
      ReadPositiveInt(*it, "prompt_tokens", std::numeric_limits<int32_t>::max() / 2));
  p.prompt_tokens = static_cast<int32_t>(prompt.value_or(0));
  if (auto ids = it->find("remote_block_ids"); ids != it->end() && !ids->is_null()) {
    if (!ids->is_array())
      return InvalidArgument("expected an array", "kv_transfer_params.remote_block_ids");
    for (const ojson& id : *ids) {
      if (!id.is_number_integer()) {
        return InvalidArgument("expected integers", "kv_transfer_params.remote_block_ids");
      }
      p.remote_block_ids.push_back(id.get<int64_t>());
    }
  }
  return std::optional<KvTransferParams>{std::move(p)};
}

// Reads the request's options other than the prompt.
Status ReadOptions(const ojson& body, CompletionRequest& request) {
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
  GS_ASSIGN_OR_RETURN(std::optional<int64_t> n, ReadPositiveInt(body, "n", kMaxChoices));
  if (n) request.n = static_cast<int32_t>(*n);
  GS_ASSIGN_OR_RETURN(request.ignore_eos, ReadBool(body, "ignore_eos", "ignore_eos"));
  GS_ASSIGN_OR_RETURN(request.stream, ReadBool(body, "stream", "stream"));
  auto options = body.find("stream_options");
  if (options != body.end() && options->is_object()) {
    GS_ASSIGN_OR_RETURN(request.include_usage,
                        ReadBool(*options, "include_usage", "stream_options.include_usage"));
    GS_ASSIGN_OR_RETURN(request.continuous_usage,
                        ReadBool(*options, "continuous_usage_stats",
                                 "stream_options.continuous_usage_stats"));
  }
  GS_ASSIGN_OR_RETURN(request.kv_transfer, ReadKvTransfer(body));
  return OkStatus();
}

ojson UsageJson(const Usage& usage) {
  return ojson{{"prompt_tokens", usage.prompt_tokens},
               {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
               {"completion_tokens", usage.completion_tokens}};
}

ojson ChunkHeader(const ResponseHeader& header) {
  const bool chat = header.endpoint == Endpoint::kChatCompletions;
  return ojson{{"id", header.id},
               {"object", chat ? "chat.completion.chunk" : "text_completion"},
               {"created", header.created_unix_seconds},
               {"model", header.model}};
}

ojson KvTransferJson(const KvTransferParams& p) {
  return ojson{{"do_remote_decode", p.do_remote_decode}, {"do_remote_prefill", p.do_remote_prefill},
               {"remote_engine_id", p.remote_engine_id}, {"remote_host", p.remote_host},
               {"remote_port", p.remote_port},           {"remote_block_ids", p.remote_block_ids},
               {"prompt_tokens", p.prompt_tokens}};
}

std::string Event(const ojson& payload) { return fmt::format("data: {}\n\n", Dump(payload)); }

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

int64_t CompletionRequest::TotalPromptTokens() const {
  int64_t total = 0;
  for (int32_t tokens : prompts) total += tokens;
  return total;
}

Result<CompletionRequest> ParseCompletionRequest(std::string_view body, Endpoint endpoint) {
  const ojson parsed = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return InvalidArgument("expected a JSON object", "body");
  CompletionRequest request;
  request.endpoint = endpoint;
  GS_RETURN_IF_ERROR(ReadOptions(parsed, request));
  constexpr int64_t kMaxPrompt = std::numeric_limits<int32_t>::max() / 2;
  GS_ASSIGN_OR_RETURN(std::optional<int64_t> hint,
                      ReadPositiveInt(parsed, "prompt_tokens", kMaxPrompt));
  std::vector<int64_t> prompts;
  std::vector<std::string> texts;
  if (hint && !parsed.contains("prompt") && !parsed.contains("messages")) {
    prompts.push_back(*hint);  // the hint alone: one prompt of that length
    texts.emplace_back();
  } else if (endpoint == Endpoint::kCompletions) {
    GS_ASSIGN_OR_RETURN(prompts, Prompts(parsed, &texts));
  } else {
    GS_ASSIGN_OR_RETURN(int64_t tokens, MessageTokens(parsed, &texts.emplace_back()));
    prompts.push_back(tokens);
  }
  if (static_cast<int64_t>(prompts.size()) * request.n > kMaxChoices) {
    return InvalidArgument(fmt::format("{} prompts x n = {} asks for more than {} choices",
                                       prompts.size(), request.n, kMaxChoices),
                           "n");
  }
  request.prompt_texts = std::move(texts);
  request.prompts.clear();
  for (int64_t tokens : prompts) {
    // An empty prompt still costs one token (the BOS token a real tokenizer adds).
    request.prompts.push_back(static_cast<int32_t>(std::clamp<int64_t>(hint.value_or(tokens), 1, kMaxPrompt)));
  }
  return request;
}

std::string_view TokenText(int32_t index) {
  return kWords[static_cast<size_t>(index) % kWords.size()];
}

namespace {

ojson FinishJson(Finish finish) {
  switch (finish) {
    case Finish::kStop:
      return "stop";
    case Finish::kLength:
      return "length";
    case Finish::kNotYet:
      break;
  }
  return nullptr;
}

}  // namespace

std::string StreamRoleEvent(const ResponseHeader& header, int32_t choice) {
  ojson chunk = ChunkHeader(header);
  ojson entry{{"index", choice},
              {"delta", {{"role", "assistant"}, {"content", ""}}},
              {"logprobs", nullptr},
              {"finish_reason", nullptr}};
  chunk["choices"] = ojson::array({std::move(entry)});
  return Event(chunk);
}

std::string StreamTokenEvent(const ResponseHeader& header, int32_t choice, int32_t token,
                             Finish finish, const std::optional<Usage>& usage) {
  ojson chunk = ChunkHeader(header);
  ojson entry{{"index", choice}};
  if (header.endpoint == Endpoint::kChatCompletions) {
    entry["delta"] = ojson{{"content", TokenText(token)}};
  } else {
    entry["text"] = TokenText(token);
  }
  entry["logprobs"] = nullptr;
  entry["finish_reason"] = FinishJson(finish);
  chunk["choices"] = ojson::array({std::move(entry)});
  if (usage) chunk["usage"] = UsageJson(*usage);
  return Event(chunk);
}

std::string StreamUsageEvent(const ResponseHeader& header, const Usage& usage) {
  ojson chunk = ChunkHeader(header);
  chunk["choices"] = ojson::array();
  chunk["usage"] = UsageJson(usage);
  return Event(chunk);
}

std::string_view StreamDoneEvent() { return "data: [DONE]\n\n"; }

std::string CompletionResponseBody(const ResponseHeader& header,
                                   const std::vector<ChoiceResult>& choices, int64_t prompt_tokens,
                                   const std::optional<KvTransferParams>& kv_transfer) {
  const bool chat = header.endpoint == Endpoint::kChatCompletions;
  ojson entries = ojson::array();
  Usage usage{prompt_tokens, 0};
  for (size_t c = 0; c < choices.size(); ++c) {
    std::string text;
    for (int32_t i = 0; i < choices[c].completion_tokens; ++i) text += TokenText(i);
    usage.completion_tokens += choices[c].completion_tokens;
    ojson entry{{"index", c}};
    if (chat) {
      entry["message"] = ojson{{"role", "assistant"}, {"content", std::move(text)}};
    } else {
      entry["text"] = std::move(text);
    }
    entry["logprobs"] = nullptr;
    entry["finish_reason"] = FinishJson(choices[c].finish);
    entries.push_back(std::move(entry));
  }
  ojson body{{"id", header.id},
             {"object", chat ? "chat.completion" : "text_completion"},
             {"created", header.created_unix_seconds},
             {"model", header.model},
             {"choices", std::move(entries)},
             {"usage", UsageJson(usage)}};
  if (kv_transfer) body["kv_transfer_params"] = KvTransferJson(*kv_transfer);
  return Dump(body);
}

std::string ModelListBody(std::string_view model, int64_t created_unix_seconds,
                          int64_t max_model_len) {
  ojson entry{{"id", model},
              {"object", "model"},
              {"created", created_unix_seconds},
              {"owned_by", "gpuscale"},
              {"root", model},
              {"max_model_len", max_model_len}};
  return Dump(ojson{{"object", "list"}, {"data", ojson::array({std::move(entry)})}});
}

std::string ModelBody(std::string_view model, int64_t created_unix_seconds,
                      int64_t max_model_len) {
  return ojson::parse(ModelListBody(model, created_unix_seconds, max_model_len))["data"][0].dump(
      -1, ' ', false, ojson::error_handler_t::replace);
}

Result<int64_t> TokenizeCount(std::string_view body) {
  const ojson parsed = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return InvalidArgument("expected a JSON object", "body");
  std::string text;  // unused: only the count is asked for
  if (parsed.contains("messages")) return MessageTokens(parsed, &text);
  if (parsed.contains("prompt")) {
    std::vector<std::string> texts;
    GS_ASSIGN_OR_RETURN(std::vector<int64_t> prompts, Prompts(parsed, &texts));
    int64_t total = 0;
    for (int64_t tokens : prompts) total += tokens;
    return total;
  }
  return InvalidArgument("expected `prompt` (text) or `messages` (a chat)", "prompt");
}

std::string TokenizeBody(int64_t count, int64_t max_model_len) {
  ojson tokens = ojson::array();
  for (int64_t i = 0; i < count; ++i) tokens.push_back(1000 + i % 30000);  // stand-in ids
  return Dump(ojson{{"count", count},
                    {"max_model_len", max_model_len},
                    {"tokens", std::move(tokens)},
                    {"token_strs", nullptr}});
}

namespace {

// One entry of an embeddings `input` list: a string, or a list of token ids.
std::optional<EmbeddingInput> EmbeddingEntry(const ojson& entry) {
  if (entry.is_string()) {
    const std::string& text = entry.get_ref<const std::string&>();
    return EmbeddingInput{text, std::max<int64_t>(1, CountWords(text))};
  }
  if (!entry.is_array() || entry.empty()) return std::nullopt;
  std::string key = "tokens:";
  for (const ojson& id : entry) {
    if (!id.is_number_integer()) return std::nullopt;
    key += std::to_string(id.get<int64_t>()) + ",";
  }
  return EmbeddingInput{std::move(key), static_cast<int64_t>(entry.size())};
}

Result<std::vector<EmbeddingInput>> EmbeddingInputs(const ojson& body) {
  auto it = body.find("input");
  if (it == body.end()) return InvalidArgument("required: a string or an array", "input");
  if (it->is_string()) return std::vector<EmbeddingInput>{*EmbeddingEntry(*it)};
  if (!it->is_array()) return InvalidArgument("expected a string or an array", "input");
  if (it->empty()) return InvalidArgument("expected at least one input", "input");
  if (it->size() > kMaxEmbeddingInputs) {
    return InvalidArgument(
        fmt::format("expected at most {} inputs, got {}", kMaxEmbeddingInputs, it->size()),
        "input");
  }
  if ((*it)[0].is_number_integer()) {  // one input of token ids: [1, 2, 3]
    std::optional<EmbeddingInput> ids = EmbeddingEntry(*it);
    if (!ids) return InvalidArgument("expected token ids (integers) only", "input");
    return std::vector<EmbeddingInput>{std::move(*ids)};
  }
  std::vector<EmbeddingInput> inputs;
  for (size_t i = 0; i < it->size(); ++i) {
    std::optional<EmbeddingInput> input = EmbeddingEntry((*it)[i]);
    if (!input) {
      return InvalidArgument("expected a string or a non-empty list of token ids",
                             fmt::format("input[{}]", i));
    }
    inputs.push_back(std::move(*input));
  }
  return inputs;
}

// RFC 4648 base64 of `bytes`.
std::string Base64(std::string_view bytes) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) {
      group = (group << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// The vector as JSON: floats, or base64 of their little-endian float32 bytes (x86 order).
ojson EmbeddingJson(const std::vector<float>& vector, bool base64) {
  if (base64) {
    return Base64(std::string_view(reinterpret_cast<const char*>(vector.data()),
                                   vector.size() * sizeof(float)));
  }
  ojson values = ojson::array();
  for (float v : vector) values.push_back(static_cast<double>(v));
  return values;
}

}  // namespace

Result<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body) {
  const ojson parsed = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return InvalidArgument("expected a JSON object", "body");
  EmbeddingRequest request;
  GS_ASSIGN_OR_RETURN(request.model, ReadString(parsed, "model", "model"));
  GS_ASSIGN_OR_RETURN(request.inputs, EmbeddingInputs(parsed));
  GS_ASSIGN_OR_RETURN(std::optional<int64_t> dimensions,
                      ReadPositiveInt(parsed, "dimensions", kEmbeddingDimensions));
  request.dimensions = static_cast<int32_t>(dimensions.value_or(kEmbeddingDimensions));
  GS_ASSIGN_OR_RETURN(std::string format, ReadString(parsed, "encoding_format", "encoding_format"));
  if (!format.empty() && format != "float" && format != "base64") {
    return InvalidArgument(fmt::format("expected \"float\" or \"base64\", got \"{}\"", format),
                           "encoding_format");
  }
  request.base64 = format == "base64";
  return request;
}

std::vector<float> EmulatedEmbedding(std::string_view key, int32_t dimensions) {
  uint64_t state = 14695981039346656037ull;  // FNV-1a of the key seeds a splitmix64 stream
  for (char c : key) state = (state ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  std::vector<float> vector(static_cast<size_t>(std::max(dimensions, 1)));
  double norm = 0;
  for (float& v : vector) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    v = static_cast<float>(static_cast<double>(z >> 11) / 9007199254740992.0 * 2 - 1);
    norm += static_cast<double>(v) * v;
  }
  const double scale = norm > 0 ? 1 / std::sqrt(norm) : 1;
  // Rounded to 6 decimals: short JSON numbers, still of unit length to 1e-5.
  for (float& v : vector) v = static_cast<float>(std::round(v * scale * 1e6) / 1e6);
  return vector;
}

std::string EmbeddingResponseBody(const EmbeddingRequest& request, std::string_view id,
                                  int64_t created_unix_seconds, std::string_view model) {
  ojson data = ojson::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const EmbeddingInput& input = request.inputs[i];
    tokens += input.prompt_tokens;
    data.push_back(
        ojson{{"object", "embedding"},
              {"index", i},
              {"embedding",
               EmbeddingJson(EmulatedEmbedding(input.key, request.dimensions), request.base64)}});
  }
  return Dump(ojson{{"id", id},
                    {"object", "list"},
                    {"created", created_unix_seconds},
                    {"model", model},
                    {"data", std::move(data)},
                    {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

std::string ErrorBody(std::string_view message, std::string_view type, std::string_view param,
                      int http_status) {
  ojson error{{"message", message},
              {"type", type},
              {"param", param.empty() ? ojson(nullptr) : ojson(param)},
              {"code", http_status}};
  return Dump(ojson{{"error", std::move(error)}});
}

}  // namespace gpuscale::emulator
