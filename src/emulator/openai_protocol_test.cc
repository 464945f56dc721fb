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

}  // namespace
}  // namespace gpuscale::emulator
