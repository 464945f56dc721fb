// The gateway's two-step routing for a prefill/decode disaggregated service (docs/gateway.md),
// in one process: a GatewayServer on 127.0.0.1 port 0 in front of EmulatorServers playing
// --role prefill and --role decode (vLLM's kv_transfer_params). Round-robin routing, so that
// sequential requests reach every replica of each pool.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "emulator/emulator_server.h"
#include "gateway/gateway_server.h"
#include "gateway/gateway_state.h"

namespace gpuscale {
namespace {

using nlohmann::json;

std::unique_ptr<emulator::EmulatorServer> StartReplica(emulator::ReplicaRole role,
                                                       const char* kv_link = "rdma-400g") {
  emulator::EmulatorOptions options;
  options.kv_link = *emulator::ParseKvLink(kv_link);
  options.model_name = "m";
  options.startup_seconds = 0;
  options.engine.decode_ms_base = 1;
  options.engine.decode_ms_per_seq = 0.05;
  options.engine.prefill_ms_per_1k_tokens = 5;
  options.http_threads = 2;
  options.role = role;
  Result<std::unique_ptr<emulator::EmulatorServer>> server =
      emulator::EmulatorServer::Start(options);
  EXPECT_TRUE(server.has_value()) << server.error().ToString();
  return server ? std::move(*server) : nullptr;
}

// A loopback port nothing listens on: bound, then closed (connections to it are refused).
int RefusingPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

class GatewayDisaggTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      prefill_.push_back(StartReplica(emulator::ReplicaRole::kPrefill));
      decode_.push_back(StartReplica(emulator::ReplicaRole::kDecode));
      ASSERT_TRUE(prefill_.back() && decode_.back());
    }
  }
  // The gateway with the service published; a port > 0 adds a refusing replica ("p-dead",
  // "d-dead") to that pool, first.
  void StartGateway(int dead_prefill_port = 0, int dead_decode_port = 0) {
    gateway::GatewayConfig config;
    config.port = 0;
    config.picker.kind = route::PickerKind::kRoundRobin;
    config.picker.slow_start_seconds = 0;
    state_ = std::make_shared<gateway::GatewayState>(config);
    gateway::ServiceRoute route{"m", {"m"}, {}};
    route.disaggregated = true;
    if (dead_prefill_port > 0) {
      route.prefill_replicas.push_back({"p-dead", "127.0.0.1", dead_prefill_port});
    }
    if (dead_decode_port > 0) route.replicas.push_back({"d-dead", "127.0.0.1", dead_decode_port});
    for (size_t i = 0; i < prefill_.size(); ++i) {
      route.prefill_replicas.push_back({Id("p", i), "127.0.0.1", prefill_[i]->port()});
      route.replicas.push_back({Id("d", i), "127.0.0.1", decode_[i]->port()});
    }
    state_->Publish({route});
    auto server = gateway::GatewayServer::Start(state_);
    ASSERT_TRUE(server.has_value()) << server.error().ToString();
    gateway_ = std::move(*server);
  }
  static std::string Id(const char* role, size_t i) { return role + std::to_string(i); }

  httplib::Result Post(const json& body) {
    httplib::Client client("127.0.0.1", gateway_->port());
    client.set_read_timeout(10, 0);
    return client.Post("/v1/completions", body.dump(), "application/json");
  }
  // The gateway releases a replica just after writing the response's last byte, so the
  // client may read it first: waits (up to 5 s) for the counts to drop.
  void ExpectNothingInFlight() {
    for (int i = 0; i < 500 && state_->StatsOf("m")->in_flight > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (const std::string id : {"p0", "p1", "d0", "d1", "p-dead", "d-dead"}) {
      EXPECT_EQ(state_->InFlight(id), 0) << id;
    }
    EXPECT_EQ(state_->StatsOf("m")->in_flight, 0);
  }

  std::vector<std::unique_ptr<emulator::EmulatorServer>> prefill_, decode_;
  std::shared_ptr<gateway::GatewayState> state_;
  std::unique_ptr<gateway::GatewayServer> gateway_;
};

TEST_F(GatewayDisaggTest, PrefillsOnOnePoolAndDecodesOnTheOther) {
  StartGateway();
  for (int i = 0; i < 4; ++i) {
    httplib::Result res =
        Post({{"model", "m"}, {"prompt_tokens", 100}, {"max_tokens", 5}, {"ignore_eos", true}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json body = json::parse(res->body);
    EXPECT_EQ(body["usage"]["completion_tokens"], 5);  // the decode replica's answer
  }
  // Each of 4 requests: its prompt prefilled on a prefill replica (plus one token there),
  // its 5 tokens decoded on a decode replica; round robin gives each replica two.
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(prefill_[i]->Stats().prompt_tokens_total, 200) << i;
    EXPECT_EQ(prefill_[i]->Stats().generation_tokens_total, 2) << i;
    EXPECT_EQ(decode_[i]->Stats().prompt_tokens_total, 0) << i;
    EXPECT_EQ(decode_[i]->Stats().generation_tokens_total, 10) << i;
  }
  ExpectNothingInFlight();
}

// Both steps reuse kept-alive replica connections: 8 requests on one client connection (one
// I/O thread) open one connection per replica, not one per step.
TEST_F(GatewayDisaggTest, ReusesReplicaConnectionsForBothSteps) {
  StartGateway();
  httplib::Client client("127.0.0.1", gateway_->port());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // else Nagle holds its body behind the header
  client.set_read_timeout(10, 0);
  const json body = {{"model", "m"}, {"prompt", "hello"}, {"max_tokens", 2}};
  for (int i = 0; i < 8; ++i) {
    httplib::Result res = client.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
  }
  const std::string metrics = state_->MetricsText();
  const std::string family = "\ngpuscale_gateway_upstream_connections_opened_total ";
  const size_t at = metrics.find(family);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_EQ(std::stod(metrics.substr(at + family.size())), 4) << "2 prefill + 2 decode replicas";
}

TEST_F(GatewayDisaggTest, StreamsTheDecodeStepToTheClient) {
  StartGateway();
  httplib::Result res = Post({{"model", "m"},
                              {"prompt", "one two three"},
                              {"max_tokens", 4},
                              {"ignore_eos", true},
                              {"stream", true}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  size_t events = 0;
  for (size_t pos = 0; (pos = res->body.find("data: {", pos)) != std::string::npos; ++pos) {
    ++events;
  }
  EXPECT_EQ(events, 4u) << res->body;
  EXPECT_NE(res->body.find("data: [DONE]"), std::string::npos);
  ExpectNothingInFlight();
  // The door's record names the decode replica, and its TTFT (to that replica's first byte).
  const gateway::ServiceStatsView view = *state_->StatsOf("m");
  EXPECT_EQ(view.requests, 1);
  EXPECT_EQ(view.errors, 0);
  EXPECT_EQ(view.ttft.cumulative_counts.back(), 1);
  EXPECT_EQ(view.requests_by_replica.count("d0") + view.requests_by_replica.count("d1"), 1u);
}

TEST_F(GatewayDisaggTest, RetriesARefusedPrefillOnAnotherReplica) {
  const int dead = RefusingPort();
  ASSERT_GT(dead, 0);
  StartGateway(dead);
  // Three requests round robin over three prefill replicas: one picks the refusing one first,
  // and its prefill is retried on a live one.
  for (int i = 0; i < 3; ++i) {
    httplib::Result res = Post({{"model", "m"}, {"prompt", "hello"}, {"max_tokens", 2}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << i << ": " << res->body;
  }
  EXPECT_EQ(
      prefill_[0]->Stats().requests_finished_total + prefill_[1]->Stats().requests_finished_total,
      3);
  ExpectNothingInFlight();
}

TEST_F(GatewayDisaggTest, RetriesARefusedDecodeOnAnotherReplica) {
  const int dead = RefusingPort();
  ASSERT_GT(dead, 0);
  StartGateway(0, dead);
  // Three requests round robin over three decode replicas: one picks the refusing one first,
  // and its decode is retried on a live one with the same KV handle.
  for (int i = 0; i < 3; ++i) {
    httplib::Result res = Post({{"model", "m"},
                                {"prompt", "hello"},
                                {"max_tokens", 2},
                                {"ignore_eos", true},
                                {"stream", i == 0}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << i << ": " << res->body;
  }
  EXPECT_EQ(
      decode_[0]->Stats().generation_tokens_total + decode_[1]->Stats().generation_tokens_total, 6);
  ExpectNothingInFlight();
}

TEST_F(GatewayDisaggTest, PassesAPrefillRefusalOnToTheClient) {
  StartGateway();
  // n = 2 cannot be disaggregated (one KV handle per request): the prefill replica's 400
  // reaches the client, and no decode replica is asked.
  httplib::Result res = Post({{"model", "m"}, {"prompt", "hello"}, {"n", 2}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "n");
  EXPECT_EQ(
      decode_[0]->Stats().generation_tokens_total + decode_[1]->Stats().generation_tokens_total, 0);
  ExpectNothingInFlight();
}

// The decode replica pulls the KV from the prefill replica, so the prefill replica stays
// counted in flight (what a drain of the prefill pool waits for) until the decode replica's
// first byte: here for the whole emulated transfer (300 prompt tokens over 0.4 Gb/s: ~0.8 s),
// during which both steps are in flight at once; both are released when the request ends.
TEST_F(GatewayDisaggTest, APrefillReplicaStaysInFlightUntilTheDecodeReplicaAnswers) {
  decode_.clear();
  for (int i = 0; i < 2; ++i)
    decode_.push_back(StartReplica(emulator::ReplicaRole::kDecode, "0.4"));
  StartGateway();
  std::thread request([&] {
    httplib::Result res = Post({{"model", "m"}, {"prompt_tokens", 300}, {"max_tokens", 2}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
  });
  bool both = false;
  for (int i = 0; i < 300 && !both; ++i) {
    const int prefill = state_->InFlight("p0") + state_->InFlight("p1");
    const int decode = state_->InFlight("d0") + state_->InFlight("d1");
    both = prefill == 1 && decode == 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  request.join();
  EXPECT_TRUE(both) << "the prefill replica was released before the decode step answered";
  ExpectNothingInFlight();
}

}  // namespace
}  // namespace gpuscale
