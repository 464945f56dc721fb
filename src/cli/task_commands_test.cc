// `gpuscale task ...` and `gpuscale experiment show` run in-process (RunCli) against a real
// api::ApiServer on 127.0.0.1 (port 0) over a FakeDaemonApi.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/api_server.h"
#include "testing/fake_daemon_api.h"
#include "testing/task_test_data.h"
#include "cli/command.h"

namespace gpuscale::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TaskCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GPUSCALE_API");
    ::unsetenv("GPUSCALE_TOKEN");
    dir_ = fs::temp_directory_path() /
           ("gpuscale_task_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    StartServer("");
  }
  void TearDown() override {
    if (server_) server_->Stop();
    ::unsetenv("GPUSCALE_API");
    ::unsetenv("GPUSCALE_TOKEN");
    fs::remove_all(dir_);
  }
  void StartServer(const std::string& token) {
    if (server_) server_->Stop();
    api::ApiServerOptions options;
    options.port = 0;
    options.token = token;
    server_ = std::make_unique<api::ApiServer>(daemon_, options);
    Result<int> port = server_->Start();
    ASSERT_TRUE(port.has_value()) << port.error().ToString();
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  // Runs `gpuscale args... --api URL`.
  int Run(std::vector<std::string> args) {
    args.push_back("--api");
    args.push_back(url_);
    return RunRaw(args);
  }
  int RunRaw(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int code = RunCli(args, out, err);
    out_ = out.str();
    err_ = err.str();
    return code;
  }

  api::FakeDaemonApi daemon_;
  std::unique_ptr<api::ApiServer> server_;
  std::string url_;
  fs::path dir_;
  std::string out_, err_;
};

TEST_F(TaskCommandsTest, SubmitSendsTheFileAsWritten) {
  const std::string path = WriteFile("sweep.yaml", api::kSweepTaskYaml);
  ASSERT_EQ(Run({"task", "submit", path}), kExitOk) << err_;
  EXPECT_NE(out_.find("submitted task 1 'sweep': 6 experiments"), std::string::npos) << out_;
  ASSERT_EQ(daemon_.submitted().size(), 1u);
  EXPECT_EQ(daemon_.submitted()[0].source_text, api::kSweepTaskYaml);
  EXPECT_EQ(daemon_.submitted()[0].definition.name, "sweep");
}

TEST_F(TaskCommandsTest, SubmitJsonOutputIsTheApiTask) {
  const std::string path = WriteFile("sweep.json", api::kSweepTaskJson);
  ASSERT_EQ(Run({"task", "submit", path, "-o", "json"}), kExitOk) << err_;
  const json body = json::parse(out_);
  EXPECT_EQ(body["name"], "sweep-json");
  EXPECT_EQ(body["experiments"].size(), 3u);
}

TEST_F(TaskCommandsTest, InvalidFileFailsLocallyNamingTheLine) {
  const std::string path = WriteFile("bad.yaml", api::kBadDurationTaskYaml);
  EXPECT_EQ(Run({"task", "submit", path}), kExitUsage);
  EXPECT_NE(err_.find("duration_seconds"), std::string::npos) << err_;
  EXPECT_NE(err_.find("line 11"), std::string::npos) << err_;
  EXPECT_TRUE(daemon_.submitted().empty());  // never sent
}

TEST_F(TaskCommandsTest, MissingFileIsAUsageError) {
  EXPECT_EQ(Run({"task", "submit", (dir_ / "nope.yaml").string()}), kExitUsage);
  EXPECT_NE(err_.find("nope.yaml"), std::string::npos) << err_;
}

TEST_F(TaskCommandsTest, DaemonRefusalKeepsItsCode) {
  daemon_.FailNextSubmit(Error{ErrorCode::kResourceExhausted,
                               "experiment #1 needs 2 GPUs, the inventory has 1", "parameters"});
  const std::string path = WriteFile("sweep.yaml", api::kSweepTaskYaml);
  EXPECT_EQ(Run({"task", "submit", path}), kExitUnsatisfiable);
  EXPECT_NE(err_.find("parameters: experiment #1 needs 2 GPUs"), std::string::npos) << err_;
}

// The test plays the daemon: once the task is submitted it marks experiments done, then the
// task succeeded; `--wait` must report progress and exit 0.
TEST_F(TaskCommandsTest, SubmitWaitReportsProgressUntilTheTaskEnds) {
  const std::string path = WriteFile("sweep.yaml", api::kSweepTaskYaml);
  std::atomic<bool> stop{false};
  std::thread daemon_side([&] {
    while (!stop && daemon_.submitted().empty()) std::this_thread::yield();
    if (stop) return;
    task::TaskRecord record = daemon_.submitted()[0];
    Result<std::vector<task::ExperimentRecord>> experiments = daemon_.ListExperiments(record.id);
    ASSERT_TRUE(experiments.has_value());
    for (task::ExperimentRecord e : *experiments) {
      e.status = task::ExperimentStatus::kSucceeded;
      loadgen::BenchReport report;
      report.output_token_throughput_per_second = 100.0 + e.index;
      e.bench = report;
      daemon_.PutExperiment(e);
    }
    record.status = task::TaskStatus::kSucceeded;
    record.experiments_done = record.experiments_total;
    record.best_experiment_id = experiments->back().id;
    daemon_.PutTask(record);
  });
  const int code = Run({"task", "submit", path, "--wait", "--poll-interval", "0.02"});
  stop = true;
  daemon_side.join();
  ASSERT_EQ(code, kExitOk) << err_;
  EXPECT_NE(err_.find("experiments 6/6 done, 0 running, best #6 (105.0 tok/s)"),
            std::string::npos)
      << err_;
  EXPECT_NE(out_.find("task 1 'sweep': succeeded"), std::string::npos) << out_;
}

TEST_F(TaskCommandsTest, SubmitWaitExitsOneWhenTheTaskFails) {
  const std::string path = WriteFile("sweep.yaml", api::kSweepTaskYaml);
  std::atomic<bool> stop{false};
  std::thread daemon_side([&] {
    while (!stop && daemon_.submitted().empty()) std::this_thread::yield();
    if (stop) return;
    task::TaskRecord record = daemon_.submitted()[0];
    record.status = task::TaskStatus::kFailed;
    record.message = "no experiment succeeded";
    daemon_.PutTask(record);
  });
  const int code = Run({"task", "submit", path, "--wait", "--poll-interval", "0.02"});
  stop = true;
  daemon_side.join();
  EXPECT_EQ(code, kExitFailure);
  EXPECT_NE(err_.find("task 1 failed: no experiment succeeded"), std::string::npos) << err_;
}

TEST_F(TaskCommandsTest, ListPrintsOneRowPerTaskNewestFirst) {
  api::SeedTasks(daemon_);
  ASSERT_EQ(Run({"task", "list"}), kExitOk) << err_;
  const size_t sweep = out_.find("llama-sweep");
  const size_t old = out_.find("old");
  ASSERT_NE(sweep, std::string::npos) << out_;
  ASSERT_NE(old, std::string::npos) << out_;
  EXPECT_LT(sweep, old);
  EXPECT_NE(out_.find("#7"), std::string::npos) << out_;
  EXPECT_NE(out_.find("1/3"), std::string::npos) << out_;
}

TEST_F(TaskCommandsTest, ListJsonIsTheApiBody) {
  api::SeedTasks(daemon_);
  ASSERT_EQ(Run({"task", "list", "-o", "json"}), kExitOk) << err_;
  const json body = json::parse(out_);
  ASSERT_EQ(body["tasks"].size(), 2u);
  EXPECT_EQ(body["tasks"][0]["id"], 4);
}

TEST_F(TaskCommandsTest, ShowTableMarksTheBestAndShowsResults) {
  api::SeedTasks(daemon_);
  ASSERT_EQ(Run({"task", "show", "4"}), kExitOk) << err_;
  EXPECT_NE(out_.find("task 4 'llama-sweep': running"), std::string::npos) << out_;
  // The best row: '*#7' (the experiment's id, as everywhere), its parameters, GPU 2, throughput,
  // TTFT and TPOT p90 in ms, and the monitoring marker.
  std::istringstream lines(out_);
  std::string line, best_row;
  while (std::getline(lines, line)) {
    if (line.find("*#7 ") != std::string::npos) best_row = line;
  }
  ASSERT_FALSE(best_row.empty()) << out_;
  for (const char* cell :
       {"succeeded", "max-num-seqs=8 tp=1", " 2 ", "412.3", "81.2 ms", "15.3 ms", "yes"}) {
    EXPECT_NE(best_row.find(cell), std::string::npos) << cell << " in: " << best_row;
  }
  EXPECT_NE(out_.find("0,1"), std::string::npos) << out_;  // the running one's GPUs
  EXPECT_NE(out_.find("needs 1"), std::string::npos) << out_;  // the queued one
}

// The column lists which GPUs an experiment holds; under "GPUS" the best one's "2" (GPU 2,
// one GPU) read as a count of two.
TEST_F(TaskCommandsTest, ShowTableNamesTheGpuColumnForItsIndices) {
  api::SeedTasks(daemon_);
  ASSERT_EQ(Run({"task", "show", "4"}), kExitOk) << err_;
  std::istringstream lines(out_);
  std::string line, header;
  while (std::getline(lines, line)) {
    if (line.find("PARAMETERS") != std::string::npos) header = line;
  }
  ASSERT_FALSE(header.empty()) << out_;
  EXPECT_NE(header.find("GPU IDS"), std::string::npos) << header;
  EXPECT_EQ(header.find("GPUS"), std::string::npos) << header;
  ASSERT_EQ(Run({"experiment", "show", "7"}), kExitOk) << err_;
  EXPECT_NE(out_.find("gpus:        1 (id 2), 19000 MiB per GPU estimated"), std::string::npos)
      << out_;
  ASSERT_EQ(Run({"experiment", "show", "8"}), kExitOk) << err_;
  EXPECT_NE(out_.find("gpus:        2 (ids 0,1)"), std::string::npos) << out_;
}

TEST_F(TaskCommandsTest, ShowJsonIsTheApiBody) {
  api::SeedTasks(daemon_);
  ASSERT_EQ(Run({"task", "show", "4", "-o", "json"}), kExitOk) << err_;
  const json body = json::parse(out_);
  EXPECT_EQ(body["id"], 4);
  EXPECT_EQ(body["experiments"].size(), 3u);
  EXPECT_EQ(body["experiments"][0]["is_best"], true);
}

TEST_F(TaskCommandsTest, ShowUnknownTaskIsNotFound) {
  EXPECT_EQ(Run({"task", "show", "42"}), kExitUsage);
  EXPECT_NE(err_.find("no task 42"), std::string::npos) << err_;
}

TEST_F(TaskCommandsTest, NonPositiveIdIsAUsageError) {
  EXPECT_EQ(Run({"task", "show", "0"}), kExitUsage);
  EXPECT_EQ(Run({"experiment", "show", "abc"}), kExitUsage);
}

TEST_F(TaskCommandsTest, CancelStopsTheTaskThenRefusesAnEndedOne) {
  api::SeedTasks(daemon_);
  ASSERT_EQ(Run({"task", "cancel", "4"}), kExitOk) << err_;
  EXPECT_NE(out_.find("cancelled task 4 'llama-sweep' (cancelled)"), std::string::npos) << out_;
  ASSERT_TRUE(daemon_.GetTask(4).has_value());
  EXPECT_EQ(daemon_.GetTask(4)->status, task::TaskStatus::kCancelled);
  EXPECT_EQ(Run({"task", "cancel", "4"}), kExitFailure);  // 409: ended already
  EXPECT_NE(err_.find("already ended"), std::string::npos) << err_;
}

TEST_F(TaskCommandsTest, ExperimentShowPrintsResults) {
  api::SeedTasks(daemon_);
  ASSERT_EQ(Run({"experiment", "show", "7"}), kExitOk) << err_;
  for (const char* text :
       {"experiment #7 (task 4): succeeded, best", "max-num-seqs=8 tp=1", "NVIDIA H100 80GB HBM3",
        "412.3", "81.2 ms", "/tmp/gpuscale/experiments/7.log", "90.0%"}) {
    EXPECT_NE(out_.find(text), std::string::npos) << text << " in:\n" << out_;
  }
  ASSERT_EQ(Run({"experiment", "show", "7", "-o", "json"}), kExitOk) << err_;
  EXPECT_EQ(json::parse(out_)["id"], 7);
}

TEST_F(TaskCommandsTest, UnreachableDaemonSaysHowToStartIt) {
  server_->Stop();  // its port is now closed
  EXPECT_EQ(Run({"task", "list"}), kExitFailure);
  EXPECT_NE(err_.find("cannot reach gpuscale at " + url_), std::string::npos) << err_;
  EXPECT_NE(err_.find("is `gpuscale serve` running?"), std::string::npos) << err_;
}

TEST_F(TaskCommandsTest, ApiUrlAndTokenComeFromFlagsOrEnvironment) {
  StartServer("s3cret");
  api::SeedTasks(daemon_);
  EXPECT_EQ(Run({"task", "list"}), kExitUsage);  // 401 without a token
  EXPECT_NE(err_.find("--token"), std::string::npos) << err_;
  EXPECT_EQ(Run({"task", "list", "--token", "s3cret"}), kExitOk) << err_;
  ::setenv("GPUSCALE_API", url_.c_str(), 1);
  ::setenv("GPUSCALE_TOKEN", "s3cret", 1);
  EXPECT_EQ(RunRaw({"task", "list"}), kExitOk) << err_;
  EXPECT_NE(out_.find("llama-sweep"), std::string::npos) << out_;
  EXPECT_EQ(RunRaw({"task", "list", "--token", "wrong"}), kExitUsage);  // the flag wins
}

TEST_F(TaskCommandsTest, BadApiUrlNamesTheFlag) {
  EXPECT_EQ(RunRaw({"task", "list", "--api", "127.0.0.1:8080/v1"}), kExitUsage);
  EXPECT_NE(err_.find("--api"), std::string::npos) << err_;
}

}  // namespace
}  // namespace gpuscale::cli
