// ExperimentRunner with real `gpuscale emulate` servers (and small shell stand-ins for
// servers that crash or never get ready): the whole run, the environment the server sees,
// failures with the log tail, cancel, and the emulator's -tp flag making a measurable
// difference. Every server binds a free 127.0.0.1 port; each test checks that the server
// process is gone and removes its temp directory.
#include "experiments/experiment_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "gpumon/monitor.h"
#include "gpumon/simulated_backend.h"
#include "gpumon/simulated_load.h"

namespace gpuscale::experiments {
namespace {

constexpr char kBinary[] = GPUSCALE_BINARY_DIR "/gpuscale";

// An emulator with short, tp-sensitive steps that is ready almost at once.
std::vector<std::string> EmulatorArgv() {
  return {kBinary,
          "emulate",
          "--port",
          "{port}",
          "--model",
          "emu",
          "--startup-seconds",
          "0.2",
          "--timing",
          "linear",
          "--decode-ms-base",
          "10",
          "--decode-ms-per-seq",
          "0.5",
          "--prefill-ms-per-1k-tokens",
          "20",
          "--drain-seconds",
          "1"};
}

class ExperimentRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscale_runner_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ExperimentLaunch Launch(std::vector<std::string> command, double bench_seconds = 1) {
    ExperimentLaunch launch;
    launch.experiment_id = 7;
    launch.task.name = "runner-test";
    launch.task.spec.model = "emu";
    launch.task.server_command = std::move(command);
    launch.task.startup_timeout = Seconds{8};
    launch.task.bench.concurrency = 4;
    launch.task.bench.input = {64, 0};
    launch.task.bench.output = {16, 0};
    launch.task.bench.duration_seconds = bench_seconds;
    launch.task.bench.drain_timeout_seconds = 3;
    launch.plan.index = 0;
    for (int index : {1, 3}) {
      alloc::SelectedGpu gpu;
      gpu.index = index;
      launch.gpus.gpus.push_back(gpu);
    }
    launch.log_path = (dir_ / "logs" / "experiment-7.log").string();  // parent is created
    return launch;
  }

  RunOutcome Run(const ExperimentLaunch& launch, RunnerOptions options = {},
                 std::function<void()> on_benchmark = nullptr) {
    options.probe_interval = Seconds{0.05};
    options.stop_grace = Seconds{3};
    ExperimentRunner runner(SystemClock::Instance(), history_, options);
    RunCallbacks callbacks;
    callbacks.on_started = [this](int pid, int port, const std::vector<std::string>& argv) {
      started_pid_ = pid;
      started_port_ = port;
      started_argv_ = argv;
    };
    callbacks.on_benchmark = [this, on_benchmark] {
      benchmark_began_ = true;
      if (on_benchmark) on_benchmark();
    };
    return runner.Run(launch, callbacks, cancel_);
  }

  static bool Gone(int pid) { return pid > 0 && ::kill(pid, 0) != 0; }

  std::filesystem::path dir_;
  std::atomic<bool> cancel_{false};
  // GPU samples a sampler would have taken: GPUs 1, 3 (the experiment's) and 5, in the
  // window after `since`.
  HistoryReader history_ = [](Seconds since) {
    std::vector<gpu::HistoryPoint> points;
    for (double dt : {0.2, 0.4}) {
      gpu::HistoryPoint point{since + Seconds{dt}, {}};
      for (int index : {1, 3, 5}) {
        gpu::GpuInfo info;
        info.index = index;
        info.utilization_percent = 50;
        point.gpus.push_back(info);
      }
      points.push_back(point);
    }
    return points;
  };
  int started_pid_ = 0;
  int started_port_ = 0;
  std::vector<std::string> started_argv_;
  bool benchmark_began_ = false;
};

TEST_F(ExperimentRunnerTest, RunsTheBenchmarkAndStopsTheServer) {
  RunOutcome outcome = Run(Launch(EmulatorArgv()));
  ASSERT_EQ(outcome.status, task::ExperimentStatus::kSucceeded) << outcome.message;
  EXPECT_EQ(outcome.message, "");
  ASSERT_TRUE(outcome.bench.has_value());
  EXPECT_GT(outcome.bench->requests_completed, 0);
  EXPECT_EQ(outcome.bench->model, "emu");
  EXPECT_TRUE(benchmark_began_);
  EXPECT_EQ(outcome.pid, started_pid_);
  EXPECT_EQ(outcome.port, started_port_);
  EXPECT_EQ(outcome.server_argv, started_argv_);
  EXPECT_EQ(outcome.server_argv[3], std::to_string(outcome.port)) << "{port} is filled in";
  EXPECT_LT(outcome.bench_started, outcome.bench_finished);
  ASSERT_TRUE(outcome.gpu_monitoring.has_value());
  EXPECT_EQ(outcome.gpu_monitoring->size(), 2u) << "only the experiment's GPUs 1 and 3";
  EXPECT_EQ(outcome.gpu_monitoring->at(3).utilization_percent.samples, 2);
  EXPECT_TRUE(Gone(outcome.pid)) << "the server never outlives Run()";
  std::ifstream log(Launch({}).log_path);
  std::string header;
  std::getline(log, header);
  EXPECT_NE(header.find("CUDA_VISIBLE_DEVICES=1,3"), std::string::npos) << header;
}

// On simulated GPUs the experiment's GPUs carry the emulated server's load while it is
// benchmarked (issue 22: gpu_monitoring was flat zeros): the runner posts the server's
// gauges on the board the simulated backend applies, and clears them when the run ends.
TEST_F(ExperimentRunnerTest, SimulatedGpusShowTheServersLoadInGpuMonitoring) {
  auto board = std::make_shared<gpu::GpuLoadBoard>();
  gpu::LoadedSimulatedBackend backend(std::make_unique<gpu::SimulatedBackend>(), board);
  gpu::MonitorOptions monitor_options;
  monitor_options.cache_ttl = Seconds{0};
  monitor_options.sample_interval = Seconds{0.1};
  gpu::Monitor monitor(backend, SystemClock::Instance(), monitor_options);
  monitor.Start();
  history_ = [&monitor](Seconds) { return monitor.History(); };
  RunnerOptions options;
  options.gpu_load = board;
  options.load_interval = Seconds{0.1};
  RunOutcome outcome = Run(Launch(EmulatorArgv(), /*bench_seconds=*/1.5), options);
  monitor.Stop();
  ASSERT_EQ(outcome.status, task::ExperimentStatus::kSucceeded) << outcome.message;
  ASSERT_TRUE(outcome.gpu_monitoring.has_value());
  for (int index : {1, 3}) {
    const gpu::GpuStats& stats = outcome.gpu_monitoring->at(index);
    EXPECT_GT(stats.memory_used_mb.max, 20000) << "an 8B model and its KV cache on GPU " << index;
    EXPECT_GT(stats.utilization_percent.max, 0) << "4 clients in a batch of 64 on GPU " << index;
  }
  EXPECT_TRUE(board->Get().empty()) << "the run's load leaves with its server";
}

TEST_F(ExperimentRunnerTest, ServerSeesTheLeasedGpusAndTheTaskEnvironment) {
  const std::string env_file = (dir_ / "env.txt").string();
  std::string script = "echo \"$CUDA_VISIBLE_DEVICES $RUNNER_TEST_MARK\" > " + env_file + "; exec";
  for (const std::string& arg : EmulatorArgv()) script += " " + arg;
  ExperimentLaunch launch = Launch({"sh", "-c", script});
  // The lease wins over a CUDA_VISIBLE_DEVICES the task sets itself.
  launch.task.env = {{"RUNNER_TEST_MARK", "marked"}, {"CUDA_VISIBLE_DEVICES", "9"}};
  launch.task.bench.duration_seconds = 0.5;
  RunOutcome outcome = Run(launch);
  ASSERT_EQ(outcome.status, task::ExperimentStatus::kSucceeded) << outcome.message;
  std::ifstream in(env_file);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "1,3 marked");
  EXPECT_TRUE(Gone(outcome.pid));
}

TEST_F(ExperimentRunnerTest, ServerThatExitsAtOnceFailsWithExitCodeAndLogTail) {
  RunOutcome outcome =
      Run(Launch({"sh", "-c", "echo first line; echo CUDA out of memory >&2; exit 7"}));
  EXPECT_EQ(outcome.status, task::ExperimentStatus::kFailed);
  EXPECT_NE(outcome.message.find("exited before it was ready (exit code 7)"), std::string::npos)
      << outcome.message;
  EXPECT_NE(outcome.message.find("CUDA out of memory"), std::string::npos) << outcome.message;
  EXPECT_FALSE(outcome.bench.has_value());
  EXPECT_FALSE(benchmark_began_);
  EXPECT_TRUE(Gone(outcome.pid));
}

TEST_F(ExperimentRunnerTest, ServerNeverReadyFailsAfterTheStartupTimeout) {
  ExperimentLaunch launch = Launch({"sh", "-c", "echo loading weights; exec sleep 30"});
  launch.task.startup_timeout = Seconds{1};
  const auto start = std::chrono::steady_clock::now();
  RunOutcome outcome = Run(launch);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(outcome.status, task::ExperimentStatus::kFailed);
  EXPECT_NE(outcome.message.find("not ready after 1 s"), std::string::npos) << outcome.message;
  EXPECT_NE(outcome.message.find("loading weights"), std::string::npos) << outcome.message;
  EXPECT_LT(took, 8) << "did not wait for the 30 s sleep";
  EXPECT_TRUE(Gone(outcome.pid));
}

TEST_F(ExperimentRunnerTest, CancelDuringTheBenchmarkStopsEverything) {
  std::thread canceller;
  RunOutcome outcome = Run(Launch(EmulatorArgv(), /*bench_seconds=*/60), {}, [&] {
    canceller = std::thread([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cancel_ = true;
    });
  });
  canceller.join();
  EXPECT_EQ(outcome.status, task::ExperimentStatus::kCancelled) << outcome.message;
  ASSERT_TRUE(outcome.bench.has_value());
  EXPECT_LT(outcome.bench->elapsed_seconds, 10) << "the 60 s benchmark was cut short";
  EXPECT_TRUE(Gone(outcome.pid));
}

TEST_F(ExperimentRunnerTest, CancelWhileStartingStopsTheServer) {
  ExperimentLaunch launch = Launch({"sleep", "30"});
  std::thread canceller([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel_ = true;
  });
  RunOutcome outcome = Run(launch);
  canceller.join();
  EXPECT_EQ(outcome.status, task::ExperimentStatus::kCancelled);
  EXPECT_TRUE(Gone(outcome.pid));
}

// The emulator's -tp (vLLM's short spelling, among flags it ignores on request) shortens its
// steps: the same closed-loop load gets clearly more output tokens per second.
TEST_F(ExperimentRunnerTest, TensorParallelTwoIsFasterThanOne) {
  std::vector<std::string> command = EmulatorArgv();
  ASSERT_EQ(command[10], "--decode-ms-base");
  command[11] = "20";  // longer steps: scheduling noise on a busy machine matters less
  for (const char* arg : {"-tp", "{tp}", "--accept-unknown-flags", "--swap-space", "4"}) {
    command.push_back(arg);
  }
  std::vector<double> tokens_per_second;
  for (int64_t tp : {1, 2}) {
    ExperimentLaunch launch = Launch(command, /*bench_seconds=*/1.5);
    launch.plan.parameters["tp"] = tp;
    launch.task.bench.concurrency = 8;
    RunOutcome outcome = Run(launch);
    ASSERT_EQ(outcome.status, task::ExperimentStatus::kSucceeded) << outcome.message;
    tokens_per_second.push_back(outcome.bench->output_token_throughput_per_second);
    EXPECT_TRUE(Gone(outcome.pid));
  }
  // The model predicts 1 / 0.55 = 1.8x; demand well over 1.3x.
  EXPECT_GT(tokens_per_second[1], 1.3 * tokens_per_second[0])
      << "tp=1 " << tokens_per_second[0] << " tok/s, tp=2 " << tokens_per_second[1] << " tok/s";
}

}  // namespace
}  // namespace gpuscale::experiments
