#include "gateway/disagg_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuscale::gateway {
namespace {

using nlohmann::json;

TEST(DisaggRequestTest, PrefillAsksOneTokenWithoutStreamAndARemoteDecode) {
  const json client = {{"model", "m"},
                       {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                       {"max_completion_tokens", 50},
                       {"stream", true},
                       {"stream_options", {{"include_usage", true}}}};
  Result<std::string> body = PrefillRequestBody(client.dump());
  ASSERT_TRUE(body.has_value()) << body.error().ToString();
  const json prefill = json::parse(*body);
  EXPECT_EQ(prefill["max_tokens"], 1);
  EXPECT_EQ(prefill["max_completion_tokens"], 1);
  EXPECT_EQ(prefill["stream"], false);
  EXPECT_FALSE(prefill.contains("stream_options"));
  EXPECT_EQ(prefill["kv_transfer_params"]["do_remote_decode"], true);
  EXPECT_EQ(prefill["kv_transfer_params"]["do_remote_prefill"], false);
  EXPECT_EQ(prefill["messages"], client["messages"]);
}

TEST(DisaggRequestTest, DecodeGetsTheClientsRequestWithThePrefillsHandle) {
  const json client = {{"model", "m"}, {"prompt", "hi"}, {"max_tokens", 50}, {"stream", true}};
  const json handle = {
      {"do_remote_prefill", true}, {"remote_engine_id", "e1"}, {"remote_block_ids", {3, 4}}};
  const json answer = {{"choices", json::array()}, {"kv_transfer_params", handle}};
  Result<std::string> body = DecodeRequestBody(client.dump(), answer.dump());
  ASSERT_TRUE(body.has_value()) << body.error().ToString();
  json expected = client;
  expected["kv_transfer_params"] = handle;
  EXPECT_EQ(json::parse(*body), expected);
}

TEST(DisaggRequestTest, ErrorsNameTheBodyOrTheMissingHandle) {
  EXPECT_EQ(PrefillRequestBody("[1]").error().field, "body");
  EXPECT_EQ(DecodeRequestBody("nope", "{}").error().field, "body");
  Result<std::string> no_handle = DecodeRequestBody(R"({"prompt": "a"})", R"({"choices": []})");
  ASSERT_FALSE(no_handle.has_value());
  EXPECT_EQ(no_handle.error().field, "kv_transfer_params");
  EXPECT_EQ(no_handle.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace gpuscale::gateway
