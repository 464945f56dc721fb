#include "experiments/experiment_runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>
#include <thread>

#include "experiments/emulated_gpu_load.h"
#include "loadgen/bench_runner.h"
#include "orch/http_probe.h"
#include "orch/process_util.h"
#include "scrape/scraper.h"
#include "task/grid.h"

namespace gpuscale::experiments {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How often waits re-check the cancel flag and the process (a wait never sleeps longer).
constexpr auto kPollSlice = std::chrono::milliseconds(50);
// The log tail reads at most this much of the end of the log file.
constexpr std::streamoff kTailBytes = 64 * 1024;

SteadyClock::duration ToSteady(Seconds seconds) {
  return std::chrono::duration_cast<SteadyClock::duration>(seconds);
}

// The last `lines` lines of the file (without a trailing newline); "" when unreadable.
std::string ReadLogTail(const std::string& path, size_t lines) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || lines == 0) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = std::max<std::streamoff>(0, size - kTailBytes);
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t pos = text.size();
  for (size_t i = 0; i < lines; ++i) {
    const size_t newline = pos == 0 ? std::string::npos : text.rfind('\n', pos - 1);
    if (newline == std::string::npos) return text;
    pos = newline;
  }
  return text.substr(pos + 1);
}

// Sleeps up to `duration` in slices; false as soon as `cancel` is set.
bool SleepUnlessCancelled(Seconds duration, const std::atomic<bool>& cancel) {
  const SteadyClock::time_point until = SteadyClock::now() + ToSteady(duration);
  while (SteadyClock::now() < until) {
    if (cancel.load()) return false;
    std::this_thread::sleep_for(std::min<SteadyClock::duration>(kPollSlice,
                                                                until - SteadyClock::now()));
  }
  return !cancel.load();
}

// Waits until `pid` (our child) has exited, up to `timeout`; true when it has.
bool WaitChildExit(int pid, Seconds timeout) {
  const SteadyClock::time_point until = SteadyClock::now() + ToSteady(timeout);
  while (true) {
    if (orch::CheckExited(pid).has_value()) return true;
    if (SteadyClock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Stops our server child: SIGTERM to its group, SIGKILL after `grace`, and waits until the
// leader is reaped; then SIGKILLs what may be left of its group (children it forked).
void StopServer(int pid, Seconds grace) {
  if (orch::CheckExited(pid).has_value()) {
    ::kill(-pid, SIGKILL);
    return;
  }
  orch::SignalGroup(pid, SIGTERM);
  if (!WaitChildExit(pid, grace)) {
    orch::SignalGroup(pid, SIGKILL);
    WaitChildExit(pid, Seconds{3600});  // SIGKILL cannot be ignored: this returns promptly
  }
  ::kill(-pid, SIGKILL);  // ESRCH when the group is empty, as it normally is
}

std::string WithTail(const std::string& message, const std::string& tail) {
  if (tail.empty()) return message + " (the server log is empty)";
  return fmt::format("{}; server log tail:\n{}", message, tail);
}

loadgen::BenchOptions BenchOptionsOf(const task::BenchSpec& spec, int port,
                                     const std::atomic<bool>& cancel) {
  loadgen::BenchOptions options;
  options.url = fmt::format("http://127.0.0.1:{}", port);  // model: the first one listed
  options.workload.mode = spec.mode;
  options.workload.rate_per_second = spec.rate_per_second;
  options.workload.input = spec.input;
  options.workload.output = spec.output;
  options.workload.seed = spec.seed;
  options.concurrency = spec.concurrency;
  options.duration_seconds = spec.duration_seconds;
  options.drain_timeout_seconds = spec.drain_timeout_seconds;
  options.cancel = &cancel;
  // Outputs as long as the task says, on a real model too (vLLM's ignore_eos): configs are
  // compared on the same work, not on where each one's model happened to stop.
  options.client.ignore_eos = true;
  return options;
}

// What a benchmark that ran amounts to; "" when it succeeded.
std::string BenchFailure(const loadgen::BenchReport& report) {
  if (report.requests_completed > 0) return "";
  if (report.requests_sent == 0) return "benchmark sent no request";
  const auto first = report.errors_by_kind.begin();
  return fmt::format("benchmark completed none of {} requests; errors: {} x {} (e.g. {})",
                     report.requests_sent, first->second, first->first,
                     report.first_error_detail);
}

}  // namespace

// The state of one Run() call, so that its steps can be separate short functions.
struct ExperimentRunner::Attempt {
  const ExperimentLaunch& launch;
  const RunCallbacks& callbacks;
  const std::atomic<bool>& cancel;
  RunOutcome outcome;

  RunOutcome Fail(std::string message) {
    outcome.status = task::ExperimentStatus::kFailed;
    outcome.message = std::move(message);
    return std::move(outcome);
  }
  RunOutcome Cancelled(std::string message) {
    outcome.status = task::ExperimentStatus::kCancelled;
    outcome.message = std::move(message);
    return std::move(outcome);
  }
};

ExperimentRunner::ExperimentRunner(Clock& clock, HistoryReader history, RunnerOptions options)
    : clock_(clock),
      history_(std::move(history)),
      options_(options),
      stop_grace_s_(options.stop_grace.count()) {}

RunOutcome ExperimentRunner::Run(const ExperimentLaunch& launch, const RunCallbacks& callbacks,
                                 const std::atomic<bool>& cancel) {
  Attempt attempt{launch, callbacks, cancel, {}};
  if (cancel.load()) return attempt.Cancelled("cancelled before the server started");
  if (Status started = StartServer(attempt); !started) {
    return attempt.Fail(started.error().ToString());
  }
  const int pid = attempt.outcome.pid;
  std::optional<std::string> not_ready = WaitReady(attempt);
  if (not_ready) {
    StopServer(pid, StopGrace());
    if (cancel.load()) return attempt.Cancelled("cancelled while the server was starting");
    return attempt.Fail(*not_ready);
  }
  if (callbacks.on_benchmark) callbacks.on_benchmark();
  RunBenchmark(attempt);
  // Checked before we stop it: a server that died under load is a failed experiment.
  const std::optional<int> crashed = orch::CheckExited(pid);
  StopServer(pid, StopGrace());
  if (cancel.load()) return attempt.Cancelled("cancelled during the benchmark");
  if (crashed) {
    return attempt.Fail(WithTail(
        fmt::format("server exited during the benchmark ({})", orch::DescribeExit(*crashed)),
        ReadLogTail(launch.log_path, options_.log_tail_lines)));
  }
  if (!attempt.outcome.message.empty()) return attempt.Fail(attempt.outcome.message);
  attempt.outcome.status = task::ExperimentStatus::kSucceeded;
  return std::move(attempt.outcome);
}

Status ExperimentRunner::StartServer(Attempt& attempt) const {
  const ExperimentLaunch& launch = attempt.launch;
  GS_ASSIGN_OR_RETURN(const int port, orch::PickFreePort(options_.port_range_start,
                                                         options_.port_range_end, {}));
  const std::vector<int> indices = launch.gpus.Indices();
  GS_ASSIGN_OR_RETURN(std::vector<std::string> argv,
                      task::RenderServerArgv(launch.task, launch.plan, {port, indices}));
  std::error_code ignored;  // a missing directory is reported by the spawn, naming the log
  const std::filesystem::path log_dir = std::filesystem::path(launch.log_path).parent_path();
  if (!log_dir.empty()) std::filesystem::create_directories(log_dir, ignored);
  const std::string gpus = fmt::format("{}", fmt::join(indices, ","));
  std::vector<std::pair<std::string, std::string>> env = launch.task.env;
  env.emplace_back("CUDA_VISIBLE_DEVICES", gpus);  // last wins: the lease decides
  orch::SpawnRequest request{argv, orch::ChildEnvironment(env), launch.log_path,
                             fmt::format("---- {} gpuscale: experiment #{} (task '{}') on port {}, "
                                         "CUDA_VISIBLE_DEVICES={}: {}\n",
                                         FormatRfc3339(clock_.Now()), launch.experiment_id,
                                         launch.task.name, port, gpus, fmt::join(argv, " "))};
  GS_ASSIGN_OR_RETURN(const int pid, orch::SpawnDetached(request));
  attempt.outcome.pid = pid;
  attempt.outcome.port = port;
  attempt.outcome.server_argv = argv;
  if (attempt.callbacks.on_started) attempt.callbacks.on_started(pid, port, argv);
  return OkStatus();
}

std::optional<std::string> ExperimentRunner::WaitReady(Attempt& attempt) const {
  const task::TaskDefinition& task = attempt.launch.task;
  const int pid = attempt.outcome.pid;
  const SteadyClock::time_point deadline = SteadyClock::now() + ToSteady(task.startup_timeout);
  while (true) {
    if (attempt.cancel.load()) return "cancelled";
    if (std::optional<int> exit = orch::CheckExited(pid)) {
      return WithTail(
          fmt::format("server exited before it was ready ({})", orch::DescribeExit(*exit)),
          ReadLogTail(attempt.launch.log_path, options_.log_tail_lines));
    }
    if (orch::HttpGetOk(attempt.outcome.port, task.readiness_path, options_.probe_timeout)) {
      return std::nullopt;
    }
    if (SteadyClock::now() >= deadline) {
      return WithTail(fmt::format("server not ready after {:.3g} s (GET {} on port {} never "
                                  "answered 200)",
                                  task.startup_timeout.count(), task.readiness_path,
                                  attempt.outcome.port),
                      ReadLogTail(attempt.launch.log_path, options_.log_tail_lines));
    }
    if (!SleepUnlessCancelled(options_.probe_interval, attempt.cancel)) return "cancelled";
  }
}

void ExperimentRunner::PostGpuLoad(const Attempt& attempt, const std::atomic<bool>& done) const {
  const std::string source = fmt::format("experiment-{}", attempt.launch.experiment_id);
  const std::string url = fmt::format("http://127.0.0.1:{}/metrics", attempt.outcome.port);
  const std::vector<int> gpus = attempt.launch.gpus.Indices();
  const gpu::GpuProcess process{attempt.outcome.pid, std::nullopt,
                                fmt::format("experiment #{}", attempt.launch.experiment_id)};
  metrics::ScrapeOptions scrape;
  scrape.timeout = std::min(options_.load_interval, Seconds{2});
  while (!done) {
    gpu::GpuLoads loads;
    if (Result<metrics::Exposition> text = metrics::ScrapeMetrics(url, scrape)) {
      AddEmulatedGpuLoad(*text, gpus, process, loads);
    }
    options_.gpu_load->Set(source, std::move(loads));
    // Short naps so the end of the benchmark is not held up by a whole interval.
    for (auto slept = Seconds{0}; slept < options_.load_interval && !done;
         slept += Seconds{0.05}) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  options_.gpu_load->Clear(source);
}

// Runs the benchmark and folds the GPU history of its window; leaves a failure reason in
// outcome.message (the caller decides whether cancel or a crash takes precedence).
void ExperimentRunner::RunBenchmark(Attempt& attempt) const {
  RunOutcome& outcome = attempt.outcome;
  std::atomic<bool> done{false};
  std::thread load;
  if (options_.gpu_load) load = std::thread([&] { PostGpuLoad(attempt, done); });
  outcome.bench_started = clock_.Now();
  Result<loadgen::BenchReport> report =
      loadgen::RunBench(BenchOptionsOf(attempt.launch.task.bench, outcome.port, attempt.cancel));
  outcome.bench_finished = clock_.Now();
  done = true;
  if (load.joinable()) load.join();
  if (!report) {
    outcome.message = "benchmark could not start: " + report.error().ToString();
  } else {
    outcome.message = BenchFailure(*report);
    outcome.bench = std::move(*report);
  }
  if (!history_) return;
  gpu::GpuStatsMap stats = MonitoringOf(history_(outcome.bench_started),
                                        attempt.launch.gpus.Indices(), outcome.bench_started,
                                        outcome.bench_finished);
  if (!stats.empty()) outcome.gpu_monitoring = std::move(stats);
}

gpu::GpuStatsMap MonitoringOf(const std::vector<gpu::HistoryPoint>& history,
                              const std::vector<int>& gpu_indices, Seconds from, Seconds to) {
  const std::set<int> wanted(gpu_indices.begin(), gpu_indices.end());
  gpu::GpuStatsMap stats;
  for (const gpu::HistoryPoint& point : history) {
    if (point.taken_at < from || point.taken_at > to) continue;
    for (const gpu::GpuInfo& gpu : point.gpus) {
      if (wanted.contains(gpu.index)) stats[gpu.index].Add(gpu);
    }
  }
  return stats;
}

std::string StopLeftoverServer(int pid, const std::vector<std::string>& argv, Seconds grace) {
  if (pid <= 0) return "no server process was recorded";
  if (!orch::ProcessAlive(pid)) return fmt::format("server pid {} is no longer running", pid);
  const std::optional<std::vector<std::string>> cmdline = orch::ReadCmdline(pid);
  if (!cmdline) return fmt::format("server pid {} is no longer running", pid);
  if (*cmdline != argv) {
    return fmt::format("pid {} now runs another program ({}); left it alone", pid,
                       fmt::join(*cmdline, " "));
  }
  orch::SignalGroup(pid, SIGTERM);
  const SteadyClock::time_point until = SteadyClock::now() + ToSteady(grace);
  while (orch::ProcessAlive(pid) && SteadyClock::now() < until) {
    std::this_thread::sleep_for(kPollSlice);
  }
  if (!orch::ProcessAlive(pid)) return fmt::format("stopped leftover server pid {} (SIGTERM)", pid);
  orch::SignalGroup(pid, SIGKILL);
  return fmt::format("killed leftover server pid {} (SIGKILL after {:.3g} s)", pid, grace.count());
}

}  // namespace gpuscale::experiments
