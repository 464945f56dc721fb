// The API under load, on the real daemon (issue 27's CI load test): 500 event-stream clients
// and 200 connections that send half a header and go quiet, while another client keeps
// asking GET /v1/services. Before the API moved onto the asynchronous server, 32 such
// connections used up its threads and every request timed out for as long as they stayed.
// Bounded (about 10 s) and loopback only.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "daemon_serve_fixture.h"
#include "testing/open_files.h"
#include "testing/raw_socket.h"

namespace gpuscale::daemon_test {
namespace {

using std::chrono::milliseconds;
using testing::RawClient;

constexpr int kStreams = 500;
constexpr int kSlowHeaders = 200;

TEST_F(DaemonServeTest, ApiAnswersWhileHundredsOfStreamsAndSlowClientsAreOpen) {
  // Both ends of every connection: this process's and the daemon's (which inherits it).
  const rlim_t wanted = 2 * (kStreams + kSlowHeaders) + 512;
  if (testing::RaiseOpenFiles(wanted) < wanted) {
    GTEST_SKIP() << "the open-files hard limit is below what 700 connections need";
  }
  StartDaemon(Config(Service(1, 2, kFastQueuePolicyYaml)));
  const int port = daemon_.port();

  std::vector<std::unique_ptr<RawClient>> streams, slow;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<RawClient>(port));
    streams.back()->Send("GET /v1/events/stream HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  for (int i = 0; i < kSlowHeaders; ++i) {
    slow.push_back(std::make_unique<RawClient>(port));
    slow.back()->Send("GET /v1/services HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  }
  int open_streams = 0;
  for (auto& s : streams) {
    const std::string head = s->ReadUntil("\r\n\r\n", milliseconds(10000));
    open_streams += head.rfind("HTTP/1.1 200 OK", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(open_streams, kStreams);

  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(5, 0);
  std::vector<double> latencies_ms;
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    httplib::Result res = client.Get("/v1/services");
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    ASSERT_TRUE(res) << "request " << i << " got no answer";
    ASSERT_EQ(res->status, 200);
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  const double p99 = latencies_ms[latencies_ms.size() * 99 / 100];
  // A bound, not a benchmark: the issue's criterion, an order of magnitude above a quiet run.
  EXPECT_LT(p99, 100.0) << "p50 " << latencies_ms[latencies_ms.size() / 2] << " ms";

  // The streams are live, not just open: a change (a second replica) reaches every one.
  ASSERT_EQ(client.Put("/v1/services/x/replicas", R"({"replicas": 2})", "application/json")
                ->status,
            200);
  int delivered = 0;
  for (auto& s : streams) {
    delivered += s->ReadUntil("event: ", milliseconds(10000)).find("\nevent: ") !=
                         std::string::npos
                     ? 1
                     : 0;
  }
  EXPECT_EQ(delivered, kStreams);
}

}  // namespace
}  // namespace gpuscale::daemon_test
