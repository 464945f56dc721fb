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

// A disaggregated service: a line per pool in the table; `pools` and `gpu_budget` in JSON.
TEST_F(ServiceCommandsTest, ADisaggregatedServiceShowsItsPoolsAndBudget) {
  daemon::PoolView prefill{.role = "prefill",
                           .policy_family = "disagg",
                           .min_replicas = 1,
                           .max_replicas = 3,
                           .gpus_per_replica = 1,
                           .desired_replicas = 2,
                           .replicas = 2,
                           .ready_replicas = 1,
                           .gpus_held = 2,
                           .last_reason = "prefill: 900 prompt tokens/s"};
  daemon::PoolView decode = prefill;
  decode.role = "decode";
  decode.gpus_held = 1;
  decode.last_reason = "decode: 40 tokens/s";
  daemon_.SetPools("chat", {prefill, decode}, 4, 3);
  ASSERT_EQ(Run({"services", "--api", url_}), 0) << err_;
  EXPECT_NE(out_.find("  prefill"), std::string::npos) << out_;
  EXPECT_NE(out_.find("GPUs 2 of 4: prefill: 900 prompt tokens/s"), std::string::npos) << out_;
  EXPECT_NE(out_.find("GPUs 1 of 4: decode: 40 tokens/s"), std::string::npos) << out_;
  ASSERT_EQ(Run({"services", "--api", url_, "-o", "json"}), 0) << err_;
  const json service = json::parse(out_)["services"][0];
  ASSERT_EQ(service["pools"].size(), 2u);
  EXPECT_EQ(service["pools"][1]["role"], "decode");
  EXPECT_EQ(service["pools"][0]["ready_replicas"], 1);
  EXPECT_EQ(service["gpu_budget"], json({{"gpus", 4}, {"held", 3}}));
}

// A service whose replicas cannot start says so in the table (not the policy's reading of no
// metrics) and in JSON's `failure` (null while they can).
TEST_F(ServiceCommandsTest, AServiceThatCannotStartSaysWhy) {
  ASSERT_EQ(Run({"services", "--api", url_, "-o", "json"}), 0) << err_;
  EXPECT_TRUE(json::parse(out_)["services"][0]["failure"].is_null()) << out_;
  daemon_.SetFailure("chat", "cannot start 'vllm': No such file or directory");
  ASSERT_EQ(Run({"services", "--api", url_}), 0) << err_;
  EXPECT_NE(out_.find("CANNOT START: cannot start 'vllm': No such file or directory"),
            std::string::npos)
      << out_;
  ASSERT_EQ(Run({"services", "--api", url_, "-o", "json"}), 0) << err_;
  EXPECT_EQ(json::parse(out_)["services"][0]["failure"],
            "cannot start 'vllm': No such file or directory");
}

// A spec the daemon could not apply yet says so, with its tries, in the table and in JSON's
// `apply_failure` (null once applied).
TEST_F(ServiceCommandsTest, AServiceWhoseSpecIsNotAppliedSaysWhyAndHowOftenItWasTried) {
  ASSERT_EQ(Run({"services", "--api", url_, "-o", "json"}), 0) << err_;
  EXPECT_TRUE(json::parse(out_)["services"][0]["apply_failure"].is_null()) << out_;
  daemon_.SetApplyFailure(
      "chat", {"spec not applied: slurm.token_file: cannot read", 3, Seconds{1'700'000'000}});
  ASSERT_EQ(Run({"services", "--api", url_}), 0) << err_;
  EXPECT_NE(out_.find("NOT APPLIED (3 tries): spec not applied: slurm.token_file"),
            std::string::npos)
      << out_;
  ASSERT_EQ(Run({"services", "--api", url_, "-o", "json"}), 0) << err_;
  const json failure = json::parse(out_)["services"][0]["apply_failure"];
  EXPECT_EQ(failure["attempts"], 3);
  EXPECT_EQ(failure["next_retry_at"], "2023-11-14T22:13:20.000Z");
}

TEST_F(ServiceCommandsTest, NoDaemonIsAnErrorThatSaysWhere) {
  server_->Stop();
  EXPECT_EQ(Run({"services", "--api", url_}), kExitFailure);
  EXPECT_NE(err_.find("cannot reach gpuscale at " + url_), std::string::npos) << err_;
}

}  // namespace
}  // namespace gpuscale::cli
