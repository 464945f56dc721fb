#include "emulator/openai_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
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
  int32_t prompt_tokens;
  int32_t max_tokens;
  bool stream;
};

TEST(OpenAiProtocolTest, ParsesPromptLengthsAndOptions) {
  const std::vector<ParseCase> cases = {
      {R"({"prompt": "hello there world"})", Endpoint::kCompletions, 3, 16, false},
      {R"({"prompt": ["a b", "c"], "max_tokens": 5, "stream": true})", Endpoint::kCompletions, 3, 5,
       true},
      {R"({"prompt": [1, 2, 3, 4]})", Endpoint::kCompletions, 4, 16, false},
      {R"({"prompt": "x", "prompt_tokens": 900, "max_tokens": 7})", Endpoint::kCompletions, 900, 7,
       false},
      {R"({"prompt": ""})", Endpoint::kCompletions, 1, 16, false},
      {R"({"messages": [{"role": "system", "content": "be brief"},
                        {"role": "user", "content": [{"type": "text", "text": "hi you"}]}],
           "max_completion_tokens": 9})",
       Endpoint::kChatCompletions, 4, 9, false},
  };
  for (const ParseCase& c : cases) {
    Result<CompletionRequest> request = ParseCompletionRequest(c.body, c.endpoint);
    ASSERT_TRUE(request.has_value()) << c.body << ": " << request.error().ToString();
    EXPECT_EQ(request->prompt_tokens, c.prompt_tokens) << c.body;
    EXPECT_EQ(request->max_tokens, c.max_tokens) << c.body;
    EXPECT_EQ(request->stream, c.stream) << c.body;
  }
  Result<CompletionRequest> usage = ParseCompletionRequest(
      R"({"prompt": "a", "stream": true, "stream_options": {"include_usage": true,
          "continuous_usage_stats": true}})",
      Endpoint::kCompletions);
  ASSERT_TRUE(usage.has_value()) << usage.error().ToString();
  EXPECT_TRUE(usage->include_usage);
  EXPECT_TRUE(usage->continuous_usage);
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
      {R"({"prompt": "a", "n": 2})", "n"},
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
  const std::string event = StreamTokenEvent(completion, 3, /*last=*/true);
  ASSERT_TRUE(event.starts_with("data: "));
  ASSERT_TRUE(event.ends_with("\n\n"));
  json chunk = json::parse(event.substr(6));
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], std::string(TokenText(3)));
  EXPECT_EQ(chunk["choices"][0]["finish_reason"], "length");

  const ResponseHeader chat{"chatcmpl-1", 1700000000, "m", Endpoint::kChatCompletions};
  json role = json::parse(StreamRoleEvent(chat).substr(6));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(role["choices"][0]["delta"]["content"], "");
  json first = json::parse(StreamTokenEvent(chat, 0, false).substr(6));
  EXPECT_FALSE(first["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(first["choices"][0]["delta"]["content"], std::string(TokenText(0)));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json running = json::parse(StreamTokenEventWithUsage(chat, 2, false, 5).substr(6));
  EXPECT_EQ(running["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(running["usage"]["completion_tokens"], 3);
  EXPECT_EQ(running["choices"][0]["delta"]["content"], std::string(TokenText(2)));
  json usage = json::parse(StreamUsageEvent(chat, 5, 7).substr(6));
  EXPECT_EQ(usage["usage"]["total_tokens"], 12);
  EXPECT_EQ(StreamDoneEvent(), "data: [DONE]\n\n");
}

TEST(OpenAiProtocolTest, WholeResponseCarriesTextAndUsage) {
  const ResponseHeader chat{"chatcmpl-2", 1, "m", Endpoint::kChatCompletions};
  json body = json::parse(CompletionResponseBody(chat, 4, 3));
  EXPECT_EQ(body["choices"][0]["message"]["content"],
            std::string(TokenText(0)) + std::string(TokenText(1)) + std::string(TokenText(2)));
  EXPECT_EQ(body["usage"]["completion_tokens"], 3);
  json error = json::parse(ErrorBody("bad \xff", "BadRequestError", "", 400));
  EXPECT_TRUE(error["error"]["param"].is_null());
  EXPECT_EQ(error["error"]["code"], 400);
}

}  // namespace
}  // namespace gpuscale::emulator
