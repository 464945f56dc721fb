// Prefill/decode roles of the emulator: the pure rules (disagg_role.h), then a prefill and a
// decode replica over real HTTP on 127.0.0.1, port 0, in vLLM's disaggregated-prefill shape.
#include "emulator/disagg_role.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "emulator/emulator_server.h"
#include "emulator/engine_flags.h"
#include "testing/fast_emulator_options.h"
#include "testing/wait_until.h"

namespace gpuscale::emulator {
namespace {

using nlohmann::json;

CompletionRequest Parsed(const json& body) {
  Result<CompletionRequest> request = ParseCompletionRequest(body.dump(), Endpoint::kCompletions);
  EXPECT_TRUE(request.has_value()) << request.error().ToString();
  return request.value_or(CompletionRequest{});
}

json Handle(int32_t prompt_tokens) {
  return {{"do_remote_prefill", true},  {"remote_engine_id", "gpuscale-emulate-1"},
          {"remote_host", "127.0.0.1"}, {"remote_port", 1},
          {"remote_block_ids", {0, 1}}, {"prompt_tokens", prompt_tokens}};
}

TEST(KvLinkTest, ParsesTheSimulatorsPresetsAndNamesTheFlag) {
  EXPECT_EQ(ParseKvLink("rdma-100g")->gbps, 100);
  EXPECT_EQ(ParseKvLink("rdma-400g")->gbps, 400);
  EXPECT_EQ(ParseKvLink("nvlink")->gbps, 3600);  // an H100's 450 GB/s
  EXPECT_EQ(ParseKvLink("25")->gbps, 25);
  Result<KvLink> bad = ParseKvLink("carrier-pigeon");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().field, "--kv-link");
  EXPECT_EQ(ParseReplicaRole("mixed").error().field, "--role");
}

TEST(KvLinkTest, TransferGrowsWithPromptTokensAndShrinksWithBandwidth) {
  const KvLink rdma100 = *ParseKvLink("rdma-100g");
  // 1000 tokens x 128 KiB = 131 MB over 12.5 GB/s.
  EXPECT_NEAR(KvTransferSeconds(1000, rdma100), 1000.0 * kKvBytesPerToken / 12.5e9, 1e-12);
  EXPECT_NEAR(KvTransferSeconds(4000, rdma100), 4 * KvTransferSeconds(1000, rdma100), 1e-12);
  EXPECT_NEAR(KvTransferSeconds(1000, *ParseKvLink("rdma-400g")),
              KvTransferSeconds(1000, rdma100) / 4, 1e-12);
}

TEST(RolePlanTest, DecodeWaitsATransferSizedByTheHandlesPrompt) {
  const KvLink link = *ParseKvLink("rdma-100g");
  for (int32_t prompt : {16, 2048}) {
    Result<RolePlan> plan =
        PlanRole(ReplicaRole::kDecode, link,
                 Parsed({{"prompt", "a b"}, {"kv_transfer_params", Handle(prompt)}}));
    ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
    EXPECT_TRUE(plan->prefilled);
    EXPECT_DOUBLE_EQ(plan->transfer_seconds, KvTransferSeconds(prompt, link));
  }
}

TEST(RolePlanTest, NamesTheFieldARoleCannotServe) {
  const KvLink link;
  json no_engine = Handle(8);
  no_engine.erase("remote_engine_id");
  json ask = {{"do_remote_decode", true}};
  struct Case {
    ReplicaRole role;
    json body;
    std::string field;
  };
  const std::vector<Case> cases = {
      {ReplicaRole::kDecode, {{"prompt", "a"}}, "kv_transfer_params"},
      {ReplicaRole::kDecode,
       {{"prompt", "a"}, {"kv_transfer_params", ask}},
       "kv_transfer_params.do_remote_prefill"},
      {ReplicaRole::kDecode,
       {{"prompt", "a"}, {"kv_transfer_params", no_engine}},
       "kv_transfer_params.remote_engine_id"},
      {ReplicaRole::kDecode, {{"prompt", "a"}, {"n", 2}, {"kv_transfer_params", Handle(8)}}, "n"},
      {ReplicaRole::kPrefill,
       {{"prompt", "a"}, {"stream", true}, {"kv_transfer_params", ask}},
       "stream"},
      {ReplicaRole::kPrefill, {{"prompt", {"a", "b"}}, {"kv_transfer_params", ask}}, "prompt"},
  };
  for (const Case& c : cases) {
    Result<RolePlan> plan = PlanRole(c.role, link, Parsed(c.body));
    ASSERT_FALSE(plan.has_value()) << c.body.dump();
    EXPECT_EQ(plan.error().field, c.field) << c.body.dump();
  }
  // Without a connector's request, a prefill or aggregated replica serves as usual.
  EXPECT_FALSE(PlanRole(ReplicaRole::kPrefill, link, Parsed({{"prompt", "a"}}))->answer_handle);
  EXPECT_FALSE(PlanRole(ReplicaRole::kAggregated, link,
                        Parsed({{"prompt", "a"}, {"kv_transfer_params", ask}}))
                   ->answer_handle);
}

TEST(RolePlanTest, HandleListsOneBlockPerSixteenTokens) {
  const KvTransferParams h = MakeKvHandle("e", "127.0.0.1", 9000, 33, 100);
  EXPECT_TRUE(h.do_remote_prefill);
  EXPECT_EQ(h.remote_block_ids, (std::vector<int64_t>{100, 101, 102}));
}

// A prefill and a decode replica on port 0 with fast steps.
class DisaggReplicasTest : public ::testing::Test {
 protected:
  static EmulatorOptions Options(ReplicaRole role) {
    EmulatorOptions options = gpuscale::testing::FastEmulatorOptions();
    options.engine.kv_cache_tokens = 8192;
    options.http_threads = 2;
    options.drain_seconds = 30;
    options.role = role;
    return options;
  }
  std::unique_ptr<EmulatorServer> Start(const EmulatorOptions& options) {
    Result<std::unique_ptr<EmulatorServer>> server = EmulatorServer::Start(options);
    EXPECT_TRUE(server.has_value()) << server.error().ToString();
    return server ? std::move(*server) : nullptr;
  }
  static httplib::Result Post(const EmulatorServer& server, const json& body) {
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(30, 0);
    return client.Post("/v1/completions", body.dump(), "application/json");
  }
  // Asks the prefill replica as vLLM's proxy does; the kv_transfer_params it answers.
  json Prefill(const EmulatorServer& prefill, int32_t prompt_tokens) {
    httplib::Result res = Post(prefill, {{"prompt_tokens", prompt_tokens},
                                         {"max_tokens", 1},
                                         {"kv_transfer_params", {{"do_remote_decode", true}}}});
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no response");
    if (!res || res->status != 200) return json::object();
    const json body = json::parse(res->body);
    EXPECT_EQ(body["usage"]["completion_tokens"], 1);
    return body["kv_transfer_params"];
  }
};

TEST_F(DisaggReplicasTest, PrefillAnswersTheFirstTokenAndAKvHandle) {
  auto prefill = Start(Options(ReplicaRole::kPrefill));
  ASSERT_NE(prefill, nullptr);
  const json handle = Prefill(*prefill, 40);
  EXPECT_EQ(handle["do_remote_prefill"], true);
  EXPECT_EQ(handle["remote_port"], prefill->port());
  EXPECT_EQ(handle["remote_host"], "127.0.0.1");
  EXPECT_FALSE(handle["remote_engine_id"].get<std::string>().empty());
  EXPECT_EQ(handle["prompt_tokens"], 40);
  EXPECT_EQ(handle["remote_block_ids"].size(), 3u);  // 40 tokens in blocks of 16
  // vLLM's counters: the prefill replica prefilled the prompt and made one token.
  EXPECT_EQ(prefill->Stats().prompt_tokens_total, 40);
  EXPECT_EQ(prefill->Stats().generation_tokens_total, 1);
}

TEST_F(DisaggReplicasTest, DecodeWithoutAHandleIsABadRequestNamingTheField) {
  auto decode = Start(Options(ReplicaRole::kDecode));
  ASSERT_NE(decode, nullptr);
  httplib::Result res = Post(*decode, {{"prompt", "hello there"}, {"max_tokens", 4}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "kv_transfer_params");
  EXPECT_EQ(decode->Stats().generation_tokens_total, 0);
}

TEST_F(DisaggReplicasTest, DecodeContinuesFromThePrefillsHandleWholeOrStreamed) {
  auto prefill = Start(Options(ReplicaRole::kPrefill));
  auto decode = Start(Options(ReplicaRole::kDecode));
  ASSERT_NE(prefill, nullptr);
  ASSERT_NE(decode, nullptr);
  const json whole_request = {{"prompt_tokens", 64},
                              {"max_tokens", 6},
                              {"ignore_eos", true},
                              {"kv_transfer_params", Prefill(*prefill, 64)}};
  httplib::Result whole = Post(*decode, whole_request);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  EXPECT_EQ(json::parse(whole->body)["usage"]["completion_tokens"], 6);

  json stream_request = whole_request;
  stream_request["kv_transfer_params"] = Prefill(*prefill, 64);
  stream_request["stream"] = true;
  httplib::Result streamed = Post(*decode, stream_request);
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200) << streamed->body;
  size_t events = 0;
  for (size_t pos = 0; (pos = streamed->body.find("data: {", pos)) != std::string::npos; ++pos) {
    ++events;
  }
  EXPECT_EQ(events, 6u);
  EXPECT_NE(streamed->body.find("data: [DONE]"), std::string::npos);
  // vLLM's counters stay coherent: prompts were prefilled on the prefill replica only.
  EXPECT_EQ(decode->Stats().prompt_tokens_total, 0);
  EXPECT_EQ(decode->Stats().generation_tokens_total, 12);
  EXPECT_EQ(prefill->Stats().prompt_tokens_total, 128);
}

TEST_F(DisaggReplicasTest, DrainingDecodeReplicaFinishesATransferInFlight) {
  EmulatorOptions options = Options(ReplicaRole::kDecode);
  // 200 tokens x 128 KiB over 0.4 Gb/s: about half a second of transfer.
  options.kv_link = *ParseKvLink("0.4");
  auto decode = Start(options);
  ASSERT_NE(decode, nullptr);
  json handle = Handle(200);
  std::future<httplib::Result> answer = std::async(std::launch::async, [&] {
    return Post(*decode,
                {{"prompt_tokens", 200}, {"max_tokens", 3}, {"kv_transfer_params", handle}});
  });
  ASSERT_TRUE(gpuscale::testing::WaitUntil([&] { return decode->OpenRequests() != 0; }));
  decode->Shutdown();  // starts while the transfer is in flight; returns once it is answered
  httplib::Result res = answer.get();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(decode->Stats().generation_tokens_total, 3);
}

}  // namespace
}  // namespace gpuscale::emulator
