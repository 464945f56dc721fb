// HttpProbe's three answers against real loopback sockets: 200, an error status or a refused
// connection (kFailed), and a server that accepts but never answers (kNoAnswer: busy or hung).
#include "orch/http_probe.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace gpuscale::orch {
namespace {

// A port with nothing listening on it (bound, then closed).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(HttpProbeTest, TellsOkFailedAndNoAnswerApart) {
  httplib::Server server;
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("", "text/plain");
  });
  server.Get("/dead", [](const httplib::Request&, httplib::Response& res) { res.status = 500; });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // A listening socket nobody accepts from: the kernel completes the connection, and no
  // answer ever comes, as from a server stuck behind a long engine step.
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(silent, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len);

  const Seconds timeout{0.3};
  EXPECT_EQ(HttpProbe(port, "/health", timeout), ProbeResult::kOk);
  EXPECT_EQ(HttpProbe(port, "/dead", timeout), ProbeResult::kFailed);
  EXPECT_EQ(HttpProbe(ClosedPort(), "/health", timeout), ProbeResult::kFailed);
  EXPECT_EQ(HttpProbe(ntohs(addr.sin_port), "/health", timeout), ProbeResult::kNoAnswer);
  close(silent);
  server.stop();
  thread.join();
}

// A replica that trickles its answer a byte at a time must not hold the caller (the control
// loop) past the probe's timeout: the timeout bounds the whole exchange, not each read.
TEST(HttpProbeTest, ATricklingAnswerIsNoAnswerWithinTheTimeout) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread trickler([listener] {
    const int conn = accept(listener, nullptr, nullptr);
    if (conn < 0) return;
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    for (char c : answer) {  // 100 ms per byte: 4 s for the answer
      if (send(conn, &c, 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    close(conn);
  });
  EXPECT_EQ(HttpProbe(ntohs(addr.sin_port), "/health", Seconds{0.3}), ProbeResult::kNoAnswer);
  shutdown(listener, SHUT_RDWR);
  close(listener);
  trickler.join();
}

}  // namespace
}  // namespace gpuscale::orch
