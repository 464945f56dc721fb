// The emulator's KV-event stream as a vLLM subscriber sees it: a ZeroMQ SUB socket on
// loopback receives [topic, sequence, payload] after a completion and decodes BlockStored
// with kvevents' decoder; /metrics counts the hit of a repeated prompt.
#include <gtest/gtest.h>
#include <httplib.h>

#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "emulator/emulator_server.h"
#include "kvevents/kv_event_codec.h"
#include "route/prompt_blocks.h"
#include "testing/fast_emulator_options.h"

namespace gpuscale::emulator {
namespace {

EmulatorOptions CachingOptions() {
  EmulatorOptions options = gpuscale::testing::FastEmulatorOptions();
  options.engine.kv_cache_tokens = 4096;
  options.engine.prefix_block_tokens = 4;
  options.kv_events_endpoint = "tcp://127.0.0.1:*";
  options.kv_events_topic = "kv-events";
  return options;
}

// One message, or nullopt when none arrives within `timeout_ms`.
std::optional<kvevents::KvEventMessage> Receive(zmq::socket_t& sub, int timeout_ms) {
  zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) == 0) return std::nullopt;
  std::vector<zmq::message_t> frames;
  do {
    frames.emplace_back();
    EXPECT_TRUE(sub.recv(frames.back(), zmq::recv_flags::none));
  } while (frames.back().more());
  std::vector<std::string_view> views;
  for (const zmq::message_t& f : frames) views.push_back(f.to_string_view());
  auto message = kvevents::DecodeKvEventMessage(views);
  EXPECT_TRUE(message) << message.error().ToString();
  if (!message) return std::nullopt;
  return *message;
}

TEST(KvEventPublisherTest, SubscriberDecodesBlockStoredAfterACompletion) {
  auto server = EmulatorServer::Start(CachingOptions());
  ASSERT_TRUE(server) << server.error().ToString();
  const std::string endpoint = (*server)->KvEventsEndpoint();
  ASSERT_NE(endpoint.find("tcp://127.0.0.1:"), std::string::npos) << endpoint;
  zmq::context_t context(1);
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::subscribe, "kv-events");
  sub.connect(endpoint);
  httplib::Client client("127.0.0.1", (*server)->port());
  // A PUB socket drops what it sends before the subscription reaches it, so the first
  // prompts may go unseen: each try is a new prompt (new blocks), each wait bounded.
  std::optional<kvevents::KvEventMessage> message;
  std::string prompt;
  for (int attempt = 0; attempt < 20 && !message; ++attempt) {
    prompt = "system prompt number " + std::to_string(attempt) + " says hello to every user";
    auto res = client.Post("/v1/completions", R"({"prompt":")" + prompt + R"(","max_tokens":1})",
                           "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    message = Receive(sub, 500);
  }
  ASSERT_TRUE(message) << "no KV event reached the subscriber";
  EXPECT_EQ(message->topic, "kv-events");
  ASSERT_EQ(message->batch.events.size(), 1u);
  const kvevents::KvEvent& stored = message->batch.events[0];
  EXPECT_EQ(stored.kind, kvevents::KvEventKind::kBlockStored);
  EXPECT_EQ(stored.block_size, 4);
  std::vector<uint64_t> keys;
  route::PromptBlockKeys(prompt, 4, &keys);  // 9 words: 2 full blocks and one word
  EXPECT_EQ(stored.block_hashes, keys);
  EXPECT_FALSE(stored.parent_block_hash);

  // The same prompt again hits both full blocks (its last token, in the partial block, is
  // prefilled) and stores nothing new.
  auto again = client.Post("/v1/completions", R"({"prompt":")" + prompt + R"(","max_tokens":1})",
                           "application/json");
  ASSERT_TRUE(again);
  const EngineStats stats = (*server)->Stats();
  EXPECT_EQ(stats.prefix_cache_hits_total, 8);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(
      metrics->body.find("vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"test-model\"} 8"),
      std::string::npos)
      << metrics->body;
}

}  // namespace
}  // namespace gpuscale::emulator
