// `gpuscale services` run in-process (RunCli) against a real api::ApiServer on 127.0.0.1
// over a FakeDaemonApi: the table, the API's JSON, -w printing only changes, and a daemon
// that is not there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "api/api_server.h"
#include "testing/fake_daemon_api.h"
#include "cli/command.h"

namespace gpuscale::cli {
namespace {

using nlohmann::json;

class ServiceCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GPUSCALE_API");
    ::unsetenv("GPUSCALE_TOKEN");
    daemon::ServiceConfig chat;
    chat.name = "chat";
    chat.command = {"serve"};
    chat.min_replicas = 1;
    chat.max_replicas = 4;
    ASSERT_TRUE(daemon_.CreateService(chat).has_value());
    daemon_.SetLastDecision("chat", Seconds{1.7e9},
                            "hold at 2: vllm:num_requests_waiting = 4 vs average_value 5");
    api::ApiServerOptions options;
    options.port = 0;
    server_ = std::make_unique<api::ApiServer>(daemon_, options);
    Result<int> port = server_->Start();
    ASSERT_TRUE(port.has_value()) << port.error().ToString();
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  void TearDown() override { server_->Stop(); }

  int Run(std::vector<std::string> args) {
    std::ostringstream out, err;
    const int code = RunCli(args, out, err);
    out_ = out.str();
    err_ = err.str();
    return code;
  }

  static int Count(const std::string& text, const std::string& needle) {
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  }

  api::FakeDaemonApi daemon_;
  std::unique_ptr<api::ApiServer> server_;
  std::string url_, out_, err_;
};

TEST_F(ServiceCommandsTest, TableShowsReplicasBoundsAndTheLastDecision) {
  ASSERT_EQ(Run({"services", "--api", url_}), 0) << err_;
  EXPECT_EQ(Count(out_, "NAME"), 1) << out_;
  EXPECT_NE(out_.find("READY/WANT"), std::string::npos) << out_;
  EXPECT_NE(out_.find("chat"), std::string::npos) << out_;
  EXPECT_NE(out_.find("1-4"), std::string::npos) << out_;
  EXPECT_NE(out_.find("hold at 2: vllm:num_requests_waiting = 4"), std::string::npos) << out_;
}

TEST_F(ServiceCommandsTest, JsonIsTheApiBody) {
  ASSERT_EQ(Run({"services", "--api", url_, "-o", "json"}), 0) << err_;
  const json body = json::parse(out_);
  ASSERT_EQ(body["services"].size(), 1u);
  EXPECT_EQ(body["services"][0]["name"], "chat");
  EXPECT_EQ(body["services"][0]["max_replicas"], 4);
}

// -w prints the table once and then only when it changes: three unchanged polls, one table.
TEST_F(ServiceCommandsTest, WatchPrintsOnlyChanges) {
  ASSERT_EQ(Run({"services", "--api", url_, "-w", "--interval", "0.05", "--watch-count", "3"}), 0)
      << err_;
  EXPECT_EQ(Count(out_, "NAME"), 1) << out_;
  EXPECT_EQ(Count(out_, "Z\n"), 1) << "one timestamp line: " << out_;
}

TEST_F(ServiceCommandsTest, NoDaemonIsAnErrorThatSaysWhere) {
  server_->Stop();
  EXPECT_EQ(Run({"services", "--api", url_}), kExitFailure);
  EXPECT_NE(err_.find("cannot reach gpuscale at " + url_), std::string::npos) << err_;
}

}  // namespace
}  // namespace gpuscale::cli
