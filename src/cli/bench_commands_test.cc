// `gpuscale bench --trace`: how malformed trace rows are handled before any request is sent,
// and the multi-tenant workload sent live (`--trace tenants:...`).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "cli/command.h"
#include "testing/loopback_server.h"

namespace gpuscale::cli {
namespace {

namespace fs = std::filesystem;

TEST(BenchCommandTest, BadTraceRowsFailUnlessSkippedAndAreThenCounted) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("gpuscale_bench_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::create_directories(dir);
  const std::string trace = (dir / "trace.csv").string();
  std::ofstream(trace) << "arrival_s,input_tokens,output_tokens\n0,10,5\nbad,1,1\n0.5,10,5\n";
  // Port 9 (discard) on loopback: nothing answers, so the run ends at the endpoint check,
  // after the trace was read.
  const std::vector<std::string> args = {"bench",      "--url",   "http://127.0.0.1:9",
                                         "--trace",    trace,     "--duration",
                                         "1",          "--no-progress"};
  std::ostringstream out, err;
  EXPECT_EQ(RunCli(args, out, err), kExitUsage);
  EXPECT_NE(err.str().find("line 3: arrival_s: expected a non-negative number, got 'bad' (or "
                           "--skip-bad-rows to skip it)"),
            std::string::npos)
      << err.str();

  auto skipping = args;
  skipping.push_back("--skip-bad-rows");
  std::ostringstream out2, err2;
  RunCli(skipping, out2, err2);
  EXPECT_NE(err2.str().find("bench: 1 bad trace row skipped, the first: line 3: arrival_s"),
            std::string::npos)
      << err2.str();
  EXPECT_EQ(err2.str().find("or --skip-bad-rows"), std::string::npos) << err2.str();
  fs::remove_all(dir);
}

TEST(BenchCommandTest, ABadTenantWorkloadIsAUsageErrorNamingTheKey) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"bench", "--url", "http://127.0.0.1:9", "--trace", "tenants:tenants=0",
                    "--duration", "1", "--no-progress"},
                   out, err),
            kExitUsage);
  EXPECT_NE(err.str().find("tenants: expected >= 1, got 0"), std::string::npos) << err.str();
}

// Records the prompt of every completion and streams one token back; a request whose
// x-gpuscale-priority is sheddable is answered 429, as the gateway's door sheds it.
class PromptRecorder : public testing::LoopbackServer {
 public:
  PromptRecorder() {
    server().Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mu_);
        prompts_.push_back(nlohmann::json::parse(req.body)["prompt"]);
      }
      if (req.get_header_value("x-gpuscale-priority") == "sheddable") {
        res.status = 429;
        return;
      }
      res.set_content("data: {\"choices\": [{\"text\": \"w\"}]}\n\ndata: [DONE]\n\n",
                      "text/event-stream");
    });
    Start();
  }
  ~PromptRecorder() { Stop(); }
  std::vector<std::string> prompts() {
    std::lock_guard lock(mu_);
    return prompts_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> prompts_;  // guarded by mu_
};

// One tenant whose system prompt is 2 blocks of 4 words: every request begins with the same
// 8 words (the gateway's and the emulator's prefix caches see them as 2 shared blocks), then
// its session's turns.
TEST(BenchCommandTest, TheTenantWorkloadSendsPromptsSharingTheSystemPromptsText) {
  PromptRecorder server;
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"bench", "--url", server.Url(), "--model", "m", "--trace",
                    "tenants:tenants=1,block_tokens=4,system_blocks=2,turn_blocks=1,rate=100,"
                    "duration=0.2",
                    "--duration", "0.2", "--no-progress", "--seed", "3"},
                   out, err),
            kExitOk)
      << err.str();
  const std::vector<std::string> prompts = server.prompts();
  ASSERT_GE(prompts.size(), 5u) << out.str();
  const auto first_words = [](const std::string& text, int n) {
    size_t at = 0;
    for (int i = 0; i < n && at != std::string::npos; ++i) at = text.find(' ', at + 1);
    return text.substr(0, at);
  };
  const std::string system = first_words(prompts[0], 8);
  ASSERT_EQ(std::ranges::count(system, ' '), 7) << prompts[0];
  for (const std::string& prompt : prompts) {
    EXPECT_EQ(first_words(prompt, 8), system);
    EXPECT_GT(prompt.size(), system.size());  // a turn follows the system prompt
  }
}

// The overload experiment's report (scripts/bench-overload): each request's priority goes out
// as a header, and the report splits sent, completed and shed requests by priority and the
// completions by tenant.
TEST(BenchCommandTest, TheTenantWorkloadsPrioritiesAreSentAndReportedApart) {
  PromptRecorder server;
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"bench", "--url", server.Url(), "--model", "m", "--trace",
                    "tenants:tenants=2,block_tokens=4,system_blocks=1,turn_blocks=1,rate=200,"
                    "duration=0.3,critical=0.5,sheddable=0.5",
                    "--duration", "0.3", "--no-progress", "--seed", "3", "-o", "json"},
                   out, err),
            kExitOk)
      << err.str();
  const nlohmann::json report = nlohmann::json::parse(out.str());
  ASSERT_TRUE(report.contains("priorities")) << out.str();
  const nlohmann::json& rows = report["priorities"];
  ASSERT_EQ(rows.size(), 2u) << rows;
  EXPECT_EQ(rows[0]["priority"], "critical");
  EXPECT_GT(rows[0]["sent"].get<int>(), 0);
  EXPECT_EQ(rows[0]["within_slo"], rows[0]["sent"]);  // no SLO given: every completion
  EXPECT_EQ(rows[0]["shed"], 0);
  EXPECT_TRUE(rows[0]["completed_by_tenant"].contains("tenant-0")) << rows[0];
  EXPECT_EQ(rows[1]["priority"], "sheddable");
  EXPECT_GT(rows[1]["sent"].get<int>(), 0);
  EXPECT_EQ(rows[1]["shed"], rows[1]["sent"]);  // every one answered 429
  EXPECT_EQ(rows[0]["sent"].get<int>() + rows[1]["sent"].get<int>(),
            report["requests_sent"].get<int>());
}

TEST(BenchCommandTest, AHeaderNameWithAColonIsAUsageError) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--duration", "1",
                    "--tenant-header", "x-tenant:"},
                   out, err),
            kExitUsage);
  EXPECT_NE(err.str().find("--tenant-header"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace gpuscale::cli
