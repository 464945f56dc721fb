#include "gateway/openai_request.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "route/picker.h"
#include "route/prompt_blocks.h"

namespace gpuscale::gateway {
namespace {

struct BadBody {
  const char* body;
  const char* field;
};

TEST(ParseInferenceRequestTest, BadBodiesNameTheField) {
  for (const BadBody& c : {
           BadBody{"", "body"},
           BadBody{"[1, 2]", "body"},
           BadBody{"{\"model\": ", "body"},
           BadBody{"{}", "model"},
           BadBody{"{\"model\": 7}", "model"},
           BadBody{"{\"model\": \"\"}", "model"},
           BadBody{"{\"model\": \"m\", \"stream\": \"yes\"}", "stream"},
       }) {
    auto r = ParseInferenceRequest(c.body, 64);
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().field, c.field) << c.body;
  }
}

TEST(ParseInferenceRequestTest, ReadsModelStreamAndThePromptPrefix) {
  auto chat = ParseInferenceRequest(
      R"({"model": "llama", "stream": true, "messages": [
           {"role": "system", "content": "You are terse."},
           {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]})",
      64);
  ASSERT_TRUE(chat.has_value());
  EXPECT_EQ(chat->model, "llama");
  EXPECT_TRUE(chat->stream);
  EXPECT_EQ(chat->prefix_key, route::HashText("You are terse.\nHi\n"));

  auto completion = ParseInferenceRequest(R"({"model": "m", "prompt": "abcdefgh"})", 4);
  ASSERT_TRUE(completion.has_value());
  EXPECT_FALSE(completion->stream);
  EXPECT_EQ(completion->prefix_key, route::HashText("abcd"));
  auto batch = ParseInferenceRequest(R"({"model": "m", "prompt": ["abcdefgh", "x"]})", 4);
  EXPECT_EQ(batch->prefix_key, route::HashText("abcd"));
  auto embedding = ParseInferenceRequest(R"({"model": "m", "input": "abcdefgh"})", 4);
  EXPECT_EQ(embedding->prefix_key, route::HashText("abcd"));
  auto null_stream = ParseInferenceRequest(R"({"model": "m", "stream": null})", 4);
  EXPECT_TRUE(null_stream.has_value());
}

// The emulator cuts a chat into words with each message's text on its own line; the
// gateway's block keys must be those of the same words, or precise routing finds nothing.
TEST(ParseInferenceRequestTest, ChatBlocksAreTheWordsOfEachMessageInTurn) {
  auto chat = ParseInferenceRequest(
      R"({"model": "m", "messages": [{"role": "system", "content": "a b"},
           {"role": "user", "content": [{"type": "text", "text": "c"}, {"text": "d"}]}]})",
      64, /*block_tokens=*/2);
  ASSERT_TRUE(chat.has_value());
  EXPECT_EQ(chat->prompt_tokens, 4);
  std::vector<uint64_t> words;
  route::PromptBlockKeys("a b c d", 2, &words);
  ASSERT_NE(chat->prompt_blocks, nullptr);
  EXPECT_EQ(*chat->prompt_blocks, words);
}

TEST(OpenAiErrorBodyTest, HasOpenAisShape) {
  auto j = nlohmann::json::parse(OpenAiErrorBody("no such model", "invalid_request_error",
                                                 "model", "model_not_found"));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  auto bare = nlohmann::json::parse(OpenAiErrorBody("x", "server_error"));
  EXPECT_TRUE(bare["error"]["param"].is_null());
  EXPECT_TRUE(bare["error"]["code"].is_null());
}

TEST(ModelListBodyTest, ListsEveryModelWithItsService) {
  auto j = nlohmann::json::parse(ModelListBody({{"a", "svc1"}, {"b", "svc2"}}));
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["id"], "b");
  EXPECT_EQ(j["data"][1]["object"], "model");
  EXPECT_EQ(j["data"][1]["owned_by"], "svc2");
}

TEST(BearerMatchesTest, ChecksSchemeAndToken) {
  EXPECT_TRUE(BearerMatches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(BearerMatches("bearer s3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer s3cretX", "s3cret"));
  EXPECT_FALSE(BearerMatches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches("", "s3cret"));
}

TEST(SseClockTest, TimesEventsSplitAcrossReadsAndIgnoresDone) {
  SseClock clock;
  clock.Observe("data: {\"a\":1}\n\nda", 1.0);
  clock.Observe("ta: {\"a\":2}\n\n", 1.5);
  clock.Observe("data: {\"a\":3}\n\ndata: [DONE]\n\n", 2.0);
  EXPECT_EQ(clock.events(), 3);
  ASSERT_TRUE(clock.MeanGapSeconds().has_value());
  EXPECT_DOUBLE_EQ(*clock.MeanGapSeconds(), 0.5);
}

TEST(SseClockTest, APlainJsonBodyHasNoTokenTimings) {
  SseClock clock;
  clock.Observe("{\"choices\": []}", 1.0);
  EXPECT_EQ(clock.events(), 0);
  EXPECT_FALSE(clock.MeanGapSeconds().has_value());
}

}  // namespace
}  // namespace gpuscale::gateway
