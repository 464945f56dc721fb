// ServeServer: a start that fails part-way stops what had started (the daemon shut down, its
// state directory lock and the API's port released), so the next start succeeds. In-process,
// simulated GPUs, no services, a temporary state directory.
#include "cli/serve_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/clock.h"

namespace gpuscale::cli {
namespace {

class ServeServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/tmp/gpuscale_serve_server_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ServeServerOptions Options(int api_port, std::string keda_listen = "") {
    ServeServerOptions o;
    o.config.gpu.backend.kind = "simulated";
    o.config.state_dir = dir_ + "/state";
    o.daemon.log = [](std::string_view) {};
    o.api.port = api_port;
    o.keda_listen = std::move(keda_listen);
    return o;
  }

  std::string dir_;
  ManualClock clock_{Seconds{1000}};
};

// A loopback socket listening on a port the kernel picked; closed with the object.
struct Listener {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  Listener() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 && listen(fd, 1) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
  }
  ~Listener() { close(fd); }
};

TEST_F(ServeServerTest, AFailedKedaStartStopsTheApiAndTheDaemonItHadStarted) {
  int port = 0;
  {
    Listener free_port;
    ASSERT_GT(free_port.port, 0);
    port = free_port.port;
  }
  auto failed = ServeServer::Start(Options(port, "no-port-here"), clock_);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().field, "--keda-scaler-listen");
  // The same state directory and API port: free again.
  auto started = ServeServer::Start(Options(port), clock_);
  ASSERT_TRUE(started) << started.error().ToString();
  EXPECT_EQ((*started)->api_port(), port);
}

TEST_F(ServeServerTest, ABusyApiPortShutsTheDaemonDown) {
  Listener busy;
  ASSERT_GT(busy.port, 0);
  auto failed = ServeServer::Start(Options(busy.port), clock_);
  ASSERT_FALSE(failed);
  auto started = ServeServer::Start(Options(0), clock_);  // the state directory is free again
  ASSERT_TRUE(started) << started.error().ToString();
  EXPECT_GT((*started)->api_port(), 0);
}

}  // namespace
}  // namespace gpuscale::cli
