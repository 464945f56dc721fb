// Precise prefix-cache routing end to end (issue 46): `gpuscale serve` starts two emulated
// replicas with --enable-prefix-caching, each told where to publish its KV events
// ({kv_events_endpoint}); the gateway subscribes to both, and a prompt goes to the replica whose
// published cache holds its prefix, not to the one least-outstanding routing would pick.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <sstream>
#include <string>

#include "daemon_serve_fixture.h"

namespace gpuscale::daemon_test {
namespace {

// Every sample of `family` on the API's /metrics, by its replica label.
std::map<std::string, double> ByReplica(int api_port, const std::string& family,
                                        const std::string& extra_label = "") {
  httplib::Client client("127.0.0.1", api_port);
  std::map<std::string, double> out;
  auto res = client.Get("/metrics");
  if (!res) return out;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(family + "{", 0) != 0 || line.find(extra_label) == std::string::npos) continue;
    const size_t id = line.find("replica=\"");
    const size_t end = line.find('"', id + 9);
    if (id == std::string::npos || end == std::string::npos) continue;
    out[line.substr(id + 9, end - id - 9)] = std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return out;
}

std::string Words(const std::string& head, int n) {
  std::string text = head;
  for (int i = 1; i < n; ++i) text += " w" + std::to_string(i);
  return text;
}

int Complete(int gateway_port, const std::string& prompt, int max_tokens) {
  httplib::Client client("127.0.0.1", gateway_port);
  client.set_read_timeout(10, 0);
  const json body = {
      {"model", "m"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"ignore_eos", true}};
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  return res ? res->status : 0;
}

TEST_F(DaemonServeTest, GatewayRoutesAPromptToTheReplicaWhoseKvEventsHoldItsPrefix) {
  std::ostringstream service;
  service << "  - name: x\n    models: [m]\n"
          << "    command: [" << kBinary << ", emulate, --port, \"{port}\", --model, m,\n"
          << "              --startup-seconds, \"0.1\", --timing, linear, --decode-ms-base, \"20\",\n"
          << "              --enable-prefix-caching, --block-size, \"4\",\n"
          << "              --kv-events-endpoint, \"{kv_events_endpoint}\"]\n"
          << "    env: {GPUSCALE_TEST_MARK: " << MarkerValue(marker_) << "}\n"
          << "    gpus_per_replica: 1\n    min_replicas: 2\n    max_replicas: 2\n"
          << "    policy:\n"
          << kFastQueuePolicyYaml;
  StartDaemon(Config(service.str(), 2,
                     "gateway: {router: {kind: prefix_cache, prefix_index: precise},\n"
                     "          prefix_cache: {block_tokens: 4}}\n"));
  const int gateway = daemon_.gateway_port();
  ASSERT_GT(gateway, 0) << daemon_.stdout_seen();
  std::map<std::string, double> connected;
  ASSERT_TRUE(WaitFor(
      [&] {
        connected = ByReplica(Port(), "gpuscale_gateway_kv_events_connected");
        return connected.size() == 2 && connected.begin()->second == 1 &&
               connected.rbegin()->second == 1;
      },
      std::chrono::seconds(10)))
      << Replicas().dump();
  // A one-second request keeps the replica least outstanding prefers (the oldest) busy, so
  // the prompt goes to the other; that one then publishes the prompt's blocks.
  auto busy = std::async(std::launch::async, [&] { return Complete(gateway, "busy", 50); });
  ASSERT_TRUE(WaitFor(
      [&] {
        double n = 0;
        for (auto& [r, v] : ByReplica(Port(), "gpuscale_gateway_replica_in_flight_requests"))
          n += v;
        return n == 1;
      },
      std::chrono::seconds(3)));
  const std::string prompt = Words("shared", 40);
  ASSERT_EQ(Complete(gateway, prompt, 1), 200);
  ASSERT_EQ(busy.get(), 200);
  std::string holder;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (auto& [r, blocks] :
             ByReplica(Port(), "gpuscale_gateway_prefix_cache_blocks", "source=\"precise\"")) {
          if (blocks >= 5) holder = r;
        }
        return !holder.empty();
      },
      std::chrono::seconds(3)));
  EXPECT_EQ(ByReplica(Port(), "gpuscale_gateway_prefix_cache_precise")[holder], 1);
  // Both idle now: least outstanding would pick the oldest (the busy one); the cache wins.
  const std::map<std::string, double> before =
      ByReplica(Port(), "gpuscale_gateway_replica_requests_total");
  ASSERT_EQ(Complete(gateway, prompt + " and a new question", 1), 200);
  const std::map<std::string, double> after =
      ByReplica(Port(), "gpuscale_gateway_replica_requests_total");
  EXPECT_EQ(after.at(holder) - before.at(holder), 1) << "the prompt went elsewhere";
}

}  // namespace
}  // namespace gpuscale::daemon_test
