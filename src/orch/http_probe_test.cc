// HttpProbe's three answers against real loopback sockets: 200, an error status or a refused
// connection (kFailed), and a server that accepts but never answers (kNoAnswer: busy or hung).
#include "orch/http_probe.h"

#include <gtest/gtest.h>

#include "testing/loopback_server.h"
#include "testing/raw_socket.h"

namespace gpuscale::orch {
namespace {

TEST(HttpProbeTest, TellsOkFailedAndNoAnswerApart) {
  testing::LoopbackServer server;
  server.server().Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("", "text/plain");
  });
  server.server().Get("/dead",
                      [](const httplib::Request&, httplib::Response& res) { res.status = 500; });
  ASSERT_TRUE(server.Start());
  // A listening socket nobody accepts from: the kernel completes the connection, and no
  // answer ever comes, as from a server stuck behind a long engine step.
  testing::RawListener silent;
  ASSERT_GT(silent.port(), 0);

  const Seconds timeout{0.3};
  EXPECT_EQ(HttpProbe(server.port(), "/health", timeout), ProbeResult::kOk);
  EXPECT_EQ(HttpProbe(server.port(), "/dead", timeout), ProbeResult::kFailed);
  EXPECT_EQ(HttpProbe(testing::ClosedLoopbackPort(), "/health", timeout), ProbeResult::kFailed);
  EXPECT_EQ(HttpProbe(silent.port(), "/health", timeout), ProbeResult::kNoAnswer);
}

// A replica that trickles its answer a byte at a time must not hold the caller (the control
// loop) past the probe's timeout: the timeout bounds the whole exchange, not each read.
TEST(HttpProbeTest, ATricklingAnswerIsNoAnswerWithinTheTimeout) {
  // 100 ms per byte: 4 s for the answer.
  testing::TricklingServer trickler("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  ASSERT_GT(trickler.port(), 0);
  EXPECT_EQ(HttpProbe(trickler.port(), "/health", Seconds{0.3}), ProbeResult::kNoAnswer);
}

}  // namespace
}  // namespace gpuscale::orch
