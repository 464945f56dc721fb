// The runner's pure fold (MonitoringOf) and the restart cleanup's pid-reuse guard
// (StopLeftoverServer against a real `sleep` child). Whole experiments with real servers are
// in tests/experiment_runner_test.cc.
#include "experiments/experiment_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "orch/process_util.h"
#include "testing/wait_until.h"

namespace gpuscale::experiments {
namespace {

gpu::GpuInfo Gpu(int index, double utilization, int64_t used_mb) {
  gpu::GpuInfo info;
  info.index = index;
  info.name = "NVIDIA H100 80GB HBM3";
  info.utilization_percent = utilization;
  info.memory_total_mb = 1000;
  info.memory_used_mb = used_mb;
  return info;
}

// Samples at t = 1..4 s of GPUs 0, 1, 2; GPU i has utilization 10 * t + i.
std::vector<gpu::HistoryPoint> History() {
  std::vector<gpu::HistoryPoint> history;
  for (int t = 1; t <= 4; ++t) {
    gpu::HistoryPoint point{Seconds{static_cast<double>(t)}, {}};
    for (int i = 0; i < 3; ++i) point.gpus.push_back(Gpu(i, 10.0 * t + i, 100 * t));
    history.push_back(point);
  }
  return history;
}

TEST(MonitoringOfTest, FoldsOnlyTheWindowAndTheExperimentsGpus) {
  const gpu::GpuStatsMap stats = MonitoringOf(History(), {0, 2}, Seconds{2}, Seconds{3});
  ASSERT_EQ(stats.size(), 2u);
  ASSERT_TRUE(stats.contains(0));
  ASSERT_TRUE(stats.contains(2));
  const gpu::GpuStats& gpu2 = stats.at(2);
  EXPECT_EQ(gpu2.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu2.utilization_percent.samples, 2);  // t = 2 and 3, bounds included
  EXPECT_DOUBLE_EQ(gpu2.utilization_percent.min, 22);
  EXPECT_DOUBLE_EQ(gpu2.utilization_percent.max, 32);
  EXPECT_DOUBLE_EQ(*gpu2.utilization_percent.Mean(), 27);
  EXPECT_DOUBLE_EQ(*gpu2.memory_used_mb.Mean(), 250);
  EXPECT_DOUBLE_EQ(gpu2.memory_usage_percent.max, 30);
}

TEST(MonitoringOfTest, EmptyWhenNoSampleFallsInTheWindow) {
  EXPECT_TRUE(MonitoringOf(History(), {0}, Seconds{5}, Seconds{9}).empty());
  EXPECT_TRUE(MonitoringOf(History(), {7}, Seconds{0}, Seconds{9}).empty());
  EXPECT_TRUE(MonitoringOf({}, {0}, Seconds{0}, Seconds{9}).empty());
}

class StopLeftoverServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscale_leftover_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    Result<int> pid = orch::SpawnDetached(
        {argv_, orch::ChildEnvironment({}), (dir_ / "sleep.log").string(), ""});
    ASSERT_TRUE(pid.has_value()) << pid.error().ToString();
    pid_ = *pid;
    // posix_spawn returns before the exec: wait until /proc shows the sleep's argv.
    gpuscale::testing::WaitUntil([&] { return orch::ReadCmdline(pid_) == argv_; });
  }
  void TearDown() override {
    if (pid_ > 0) {
      orch::SignalGroup(pid_, SIGKILL);
      gpuscale::testing::WaitUntil([&] { return orch::CheckExited(pid_); }, std::chrono::hours(1));
    }
    std::filesystem::remove_all(dir_);
  }

  const std::vector<std::string> argv_ = {"sleep", "30"};
  std::filesystem::path dir_;
  int pid_ = 0;
};

TEST_F(StopLeftoverServerTest, RefusesAPidRunningAnotherCommand) {
  const std::string result = StopLeftoverServer(pid_, {"sleep", "31"}, Seconds{1});
  EXPECT_NE(result.find("another program"), std::string::npos) << result;
  EXPECT_NE(result.find("sleep 30"), std::string::npos) << result;
  EXPECT_TRUE(orch::ProcessAlive(pid_)) << "a pid whose cmdline differs is never signalled";
}

TEST_F(StopLeftoverServerTest, StopsTheServerItStarted) {
  const std::string result = StopLeftoverServer(pid_, argv_, Seconds{5});
  EXPECT_NE(result.find("stopped leftover server"), std::string::npos) << result;
  EXPECT_FALSE(orch::ProcessAlive(pid_));
}

TEST(StopLeftoverServerNoProcessTest, SaysWhatItFound) {
  EXPECT_NE(StopLeftoverServer(0, {"x"}, Seconds{1}).find("no server process"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuscale::experiments
