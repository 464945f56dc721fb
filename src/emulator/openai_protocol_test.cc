#include "emulator/openai_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpuscale::emulator {
namespace {

using nlohmann::json;

TEST(OpenAiProtocolTest, CountsWhitespaceWords) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"", 0}, {"   ", 0}, {"one", 1}, {" two  words ", 2}, {"a\tb\nc\r\nd", 4}};
  for (const auto& [text, words] : cases) EXPECT_EQ(CountWords(text), words) << text;
}

struct ParseCase {
  std::string body;
  Endpoint endpoint;
  std::vector<int32_t> prompts;
  std::optional<int32_t> max_tokens;
  int32_t n;
};

TEST(OpenAiProtocolTest, ParsesPromptsLimitsAndChoices) {
  const std::vector<ParseCase> cases = {
      {R"({"prompt": "hello there world"})", Endpoint::kCompletions, {3}, std::nullopt, 1},
      // A list of strings is one prompt each (one choice each), as OpenAI and vLLM read it.
      {R"({"prompt": ["a b", "c"], "max_tokens": 5, "n": 2})", Endpoint::kCompletions, {2, 1}, 5,
       2},
      {R"({"prompt": [1, 2, 3, 4]})", Endpoint::kCompletions, {4}, std::nullopt, 1},
      {R"({"prompt": [[1, 2], [3], "x y z"]})", Endpoint::kCompletions, {2, 1, 3}, std::nullopt,
       1},
      {R"({"prompt": ["x", "y"], "prompt_tokens": 900, "max_tokens": 7})",
       Endpoint::kCompletions, {900, 900}, 7, 1},
      {R"({"prompt": ""})", Endpoint::kCompletions, {1}, std::nullopt, 1},
      {R"({"messages": [{"role": "system", "content": "be brief"},
                        {"role": "user", "content": [{"type": "text", "text": "hi you"}]}],
           "max_completion_tokens": 9, "n": 3})",
       Endpoint::kChatCompletions, {4}, 9, 3},
  };
  for (const ParseCase& c : cases) {
    Result<CompletionRequest> request = ParseCompletionRequest(c.body, c.endpoint);
    ASSERT_TRUE(request.has_value()) << c.body << ": " << request.error().ToString();
    EXPECT_EQ(request->prompts, c.prompts) << c.body;
    EXPECT_EQ(request->max_tokens, c.max_tokens) << c.body;
    EXPECT_EQ(request->n, c.n) << c.body;
    EXPECT_EQ(request->Choices(), static_cast<int32_t>(c.prompts.size()) * c.n) << c.body;
  }
  Result<CompletionRequest> flags = ParseCompletionRequest(
      R"({"prompt": "a", "stream": true, "ignore_eos": true,
          "stream_options": {"include_usage": true, "continuous_usage_stats": true}})",
      Endpoint::kCompletions);
  ASSERT_TRUE(flags.has_value()) << flags.error().ToString();
  EXPECT_TRUE(flags->stream);
  EXPECT_TRUE(flags->ignore_eos);
  EXPECT_TRUE(flags->include_usage);
  EXPECT_TRUE(flags->continuous_usage);
}

TEST(OpenAiProtocolTest, ChoicesRunPromptByPromptAndUsageCountsEachPromptOnce) {
  Result<CompletionRequest> request = ParseCompletionRequest(
      R"({"prompt": ["a", "b c d"], "n": 3})", Endpoint::kCompletions);
  ASSERT_TRUE(request.has_value()) << request.error().ToString();
  EXPECT_EQ(request->Choices(), 6);
  EXPECT_EQ(request->PromptOfChoice(2), 1);
  EXPECT_EQ(request->PromptOfChoice(3), 3);
  EXPECT_EQ(request->TotalPromptTokens(), 4);
}

TEST(OpenAiProtocolTest, RejectsBadBodiesNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "body"},
      {R"(["a"])", "body"},
      {R"({})", "prompt"},
      {R"({"prompt": 3})", "prompt"},
      {R"({"prompt": "a", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 1.5})", "max_tokens"},
      {R"({"prompt": "a", "stream": "yes"})", "stream"},
      {R"({"prompt": "a", "n": 0})", "n"},
      {R"({"prompt": "a", "n": 129})", "n"},
      {R"({"prompt": ["a", "b"], "n": 65})", "n"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": [1, "a"]})", "prompt"},
      {R"({"prompt": ["a", 1]})", "prompt[1]"},
      {R"({"prompt": ["a", [1, "b"]]})", "prompt[1]"},
      {R"({"prompt": "a", "ignore_eos": "yes"})", "ignore_eos"},
      {R"({"prompt": "a", "stream_options": {"continuous_usage_stats": 1}})",
       "stream_options.continuous_usage_stats"},
      {R"({"prompt": "a", "model": 1})", "model"},
  };
  for (const auto& [body, field] : cases) {
    Result<CompletionRequest> request = ParseCompletionRequest(body, Endpoint::kCompletions);
    ASSERT_FALSE(request.has_value()) << body;
    EXPECT_EQ(request.error().field, field) << body;
  }
  EXPECT_EQ(ParseCompletionRequest(R"({"prompt": "a"})", Endpoint::kChatCompletions).error().field,
            "messages");
}

TEST(OpenAiProtocolTest, StreamEventsAreOpenAiChunks) {
  const ResponseHeader completion{"cmpl-1", 1700000000, "m", Endpoint::kCompletions};
  const std::string event = StreamTokenEvent(completion, 2, 3, Finish::kLength);
  ASSERT_TRUE(event.starts_with("data: "));
  ASSERT_TRUE(event.ends_with("\n\n"));
  json chunk = json::parse(event.substr(6));
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["index"], 2);
  EXPECT_EQ(chunk["choices"][0]["text"], std::string(TokenText(3)));
  EXPECT_EQ(chunk["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(chunk.contains("usage"));
  EXPECT_EQ(json::parse(StreamTokenEvent(completion, 0, 0, Finish::kStop).substr(6))
                ["choices"][0]["finish_reason"],
            "stop");

  const ResponseHeader chat{"chatcmpl-1", 1700000000, "m", Endpoint::kChatCompletions};
  json role = json::parse(StreamRoleEvent(chat, 1).substr(6));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["index"], 1);
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(role["choices"][0]["delta"]["content"], "");
  json first = json::parse(StreamTokenEvent(chat, 0, 0, Finish::kNotYet).substr(6));
  EXPECT_FALSE(first["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(first["choices"][0]["delta"]["content"], std::string(TokenText(0)));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json running =
      json::parse(StreamTokenEvent(chat, 0, 2, Finish::kNotYet, Usage{5, 3}).substr(6));
  EXPECT_EQ(running["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(running["usage"]["completion_tokens"], 3);
  EXPECT_EQ(running["choices"][0]["delta"]["content"], std::string(TokenText(2)));
  json usage = json::parse(StreamUsageEvent(chat, Usage{5, 7}).substr(6));
  EXPECT_EQ(usage["usage"]["total_tokens"], 12);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(StreamDoneEvent(), "data: [DONE]\n\n");
}

TEST(OpenAiProtocolTest, WholeResponseCarriesEveryChoiceAndUsage) {
  const ResponseHeader chat{"chatcmpl-2", 1, "m", Endpoint::kChatCompletions};
  json body = json::parse(CompletionResponseBody(
      chat, {{3, Finish::kLength}, {1, Finish::kStop}}, /*prompt_tokens=*/4));
  ASSERT_EQ(body["choices"].size(), 2u);
  EXPECT_EQ(body["choices"][0]["message"]["content"],
            std::string(TokenText(0)) + std::string(TokenText(1)) + std::string(TokenText(2)));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["choices"][1]["index"], 1);
  EXPECT_EQ(body["choices"][1]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(body["usage"]["completion_tokens"], 4);
  json error = json::parse(ErrorBody("bad \xff", "BadRequestError", "", 400));
  EXPECT_TRUE(error["error"]["param"].is_null());
  EXPECT_EQ(error["error"]["code"], 400);
}

struct EmbeddingCase {
  std::string body;
  std::vector<int64_t> tokens;  // prompt tokens per input
  int32_t dimensions;
  bool base64;
};

TEST(OpenAiProtocolTest, ParsesEveryFormOfEmbeddingsInput) {
  const std::vector<EmbeddingCase> cases = {
      {R"({"input": "one two three"})", {3}, kEmbeddingDimensions, false},
      {R"({"input": ""})", {1}, kEmbeddingDimensions, false},
      {R"({"input": ["a", "b c"], "model": "m"})", {1, 2}, kEmbeddingDimensions, false},
      {R"({"input": [5, 6, 7, 8]})", {4}, kEmbeddingDimensions, false},
      {R"({"input": [[1, 2], [3]], "dimensions": 8})", {2, 1}, 8, false},
      {R"({"input": "a", "encoding_format": "base64"})", {1}, kEmbeddingDimensions, true},
      {R"({"input": "a", "encoding_format": "float", "dimensions": null})",
       {1},
       kEmbeddingDimensions,
       false},
  };
  for (const EmbeddingCase& c : cases) {
    Result<EmbeddingRequest> request = ParseEmbeddingRequest(c.body);
    ASSERT_TRUE(request.has_value()) << c.body << ": " << request.error().ToString();
    std::vector<int64_t> tokens;
    for (const EmbeddingInput& input : request->inputs) tokens.push_back(input.prompt_tokens);
    EXPECT_EQ(tokens, c.tokens) << c.body;
    EXPECT_EQ(request->dimensions, c.dimensions) << c.body;
    EXPECT_EQ(request->base64, c.base64) << c.body;
  }
  EXPECT_EQ(ParseEmbeddingRequest(R"({"input": "a", "model": "m"})")->model, "m");
}

TEST(OpenAiProtocolTest, RejectsBadEmbeddingsBodiesNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "body"},
      {R"(["a"])", "body"},
      {R"({})", "input"},
      {R"({"input": 3})", "input"},
      {R"({"input": null})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": [1, "a"]})", "input"},
      {R"({"input": ["a", 1]})", "input[1]"},
      {R"({"input": ["a", []]})", "input[1]"},
      {R"({"input": ["a", [1, "b"]]})", "input[1]"},
      {R"({"input": "a", "model": 1})", "model"},
      {R"({"input": "a", "dimensions": 0})", "dimensions"},
      {R"({"input": "a", "dimensions": 385})", "dimensions"},
      {R"({"input": "a", "encoding_format": "binary"})", "encoding_format"},
  };
  for (const auto& [body, field] : cases) {
    Result<EmbeddingRequest> request = ParseEmbeddingRequest(body);
    ASSERT_FALSE(request.has_value()) << body;
    EXPECT_EQ(request.error().field, field) << body;
  }
  std::string many = R"({"input": [)";
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) many += i == 0 ? R"("a")" : R"(, "a")";
  EXPECT_EQ(ParseEmbeddingRequest(many + "]}").error().field, "input");
}

TEST(OpenAiProtocolTest, EmbeddingsAreDeterministicUnitVectors) {
  const std::vector<float> a = EmulatedEmbedding("hello world", kEmbeddingDimensions);
  ASSERT_EQ(a.size(), static_cast<size_t>(kEmbeddingDimensions));
  EXPECT_EQ(EmulatedEmbedding("hello world", kEmbeddingDimensions), a);
  EXPECT_NE(EmulatedEmbedding("hello world!", kEmbeddingDimensions), a);
  for (int32_t dimensions : {1, 8, kEmbeddingDimensions}) {
    double norm = 0;
    for (float v : EmulatedEmbedding("x", dimensions)) norm += static_cast<double>(v) * v;
    EXPECT_NEAR(norm, 1.0, 1e-4) << dimensions;
  }
}

TEST(OpenAiProtocolTest, EmbeddingsResponseIsOpenAisShape) {
  Result<EmbeddingRequest> request =
      ParseEmbeddingRequest(R"({"input": ["one two", [7, 8, 9]], "dimensions": 4})");
  ASSERT_TRUE(request.has_value());
  const json body = json::parse(EmbeddingResponseBody(*request, "embd-1", 1700000000, "m"));
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["id"], "embd-1");
  ASSERT_EQ(body["data"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(body["data"][i]["object"], "embedding");
    EXPECT_EQ(body["data"][i]["index"], i);
    ASSERT_EQ(body["data"][i]["embedding"].size(), 4u);
  }
  EXPECT_EQ(body["data"][0]["embedding"][0].get<float>(), EmulatedEmbedding("one two", 4)[0]);
  EXPECT_EQ(body["usage"], json({{"prompt_tokens", 5}, {"total_tokens", 5}}));
  // base64: little-endian float32s; a one-dimensional unit vector is 1.0f or -1.0f.
  request =
      ParseEmbeddingRequest(R"({"input": "a", "dimensions": 1, "encoding_format": "base64"})");
  ASSERT_TRUE(request.has_value());
  const json encoded = json::parse(EmbeddingResponseBody(*request, "embd-2", 0, "m"));
  const std::string expected = EmulatedEmbedding("a", 1)[0] > 0 ? "AACAPw==" : "AACAvw==";
  EXPECT_EQ(encoded["data"][0]["embedding"], expected);
}

}  // namespace
}  // namespace gpuscale::emulator
