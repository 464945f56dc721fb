#include "loadgen/bench_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <ostream>
#include <thread>
#include <vector>

#include "loadgen/completion_client.h"

namespace gpuscale::loadgen {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr auto kFailureBackoff = std::chrono::milliseconds(50);

SteadyClock::duration ToDuration(double seconds) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
}

// One benchmark run: the shared state of its client threads. Member functions run on the
// threads RunBench starts; mu_ guards the members marked so.
class BenchRun {
 public:
  BenchRun(const BenchOptions& options, ServerUrl url, std::string model)
      : options_(options),
        url_(std::move(url)),
        model_(std::move(model)),
        generator_(options.workload) {}

  BenchReport Run();

 private:
  std::optional<PlannedRequest> NextClosedLoop();
  std::optional<PlannedRequest> NextOpenLoop();
  void Worker(bool closed_loop);
  void Dispatch();
  void Watch();
  void CancelAll();
  void PrintProgress(bool final_line);

  const BenchOptions& options_;
  const ServerUrl url_;
  const std::string model_;
  SteadyClock::time_point start_;
  SteadyClock::time_point deadline_;

  std::mutex mu_;
  std::condition_variable cv_;
  WorkloadGenerator generator_;             // guarded by mu_
  std::deque<PlannedRequest> queue_;        // guarded by mu_: open-loop arrivals not yet sent
  std::vector<std::thread> workers_;        // spawned by Run/Dispatch only
  std::vector<CompletionClient*> clients_;  // guarded by mu_: for CancelAll
  std::vector<RequestOutcome> outcomes_;    // guarded by mu_
  int idle_workers_ = 0;                    // guarded by mu_
  bool dispatch_done_ = false;              // guarded by mu_
  bool cancelled_ = false;                  // guarded by mu_
  std::atomic<bool> finished_{false};
  std::atomic<int64_t> sent_{0}, in_flight_{0}, completed_{0}, failed_{0}, output_tokens_{0};
};

std::optional<PlannedRequest> BenchRun::NextClosedLoop() {
  std::lock_guard lock(mu_);
  if (cancelled_ || SteadyClock::now() >= deadline_) return std::nullopt;
  return generator_.Next();
}

std::optional<PlannedRequest> BenchRun::NextOpenLoop() {
  std::unique_lock lock(mu_);
  ++idle_workers_;
  cv_.wait(lock, [&] { return cancelled_ || dispatch_done_ || !queue_.empty(); });
  --idle_workers_;
  if (cancelled_ || queue_.empty()) return std::nullopt;
  PlannedRequest next = queue_.front();
  queue_.pop_front();
  return next;
}

void BenchRun::Worker(bool closed_loop) {
  CompletionClient client(url_, model_, options_.client);
  {
    std::lock_guard lock(mu_);
    if (cancelled_) client.Cancel();
    clients_.push_back(&client);
  }
  while (std::optional<PlannedRequest> next = closed_loop ? NextClosedLoop() : NextOpenLoop()) {
    ++sent_;
    ++in_flight_;
    double queued = 0;
    if (!closed_loop) {
      const SteadyClock::time_point due = start_ + ToDuration(next->send_at_seconds);
      queued = std::max(0.0, std::chrono::duration<double>(SteadyClock::now() - due).count());
    }
    RequestOutcome outcome = client.Send(*next);
    if (!closed_loop) {
      outcome.due_seconds = next->send_at_seconds;
      outcome.queued_seconds = queued;
    }
    --in_flight_;
    ++(outcome.ok ? completed_ : failed_);
    output_tokens_ += outcome.output_tokens;
    const bool failed = !outcome.ok;
    {
      std::lock_guard lock(mu_);
      outcomes_.push_back(std::move(outcome));
    }
    // A closed-loop client whose server fails fast (refused, 503) would otherwise spin.
    if (failed && closed_loop) std::this_thread::sleep_for(kFailureBackoff);
  }
  std::lock_guard lock(mu_);
  std::erase(clients_, &client);
}

// Open loop: wakes at each arrival, queues it and starts a client when none is idle.
void BenchRun::Dispatch() {
  while (true) {
    std::optional<PlannedRequest> next;
    {
      std::lock_guard lock(mu_);
      if (!cancelled_) next = generator_.Next();
    }
    if (!next) break;
    const SteadyClock::time_point due = start_ + ToDuration(next->send_at_seconds);
    if (due >= deadline_) break;
    std::unique_lock lock(mu_);
    // Waits on cv_ (not a sleep) so that a cancel wakes the dispatcher at once.
    if (cv_.wait_until(lock, due, [&] { return cancelled_; })) break;
    queue_.push_back(*next);
    if (idle_workers_ == 0 && std::ssize(workers_) < options_.concurrency) {
      workers_.emplace_back([this] { Worker(/*closed_loop=*/false); });
    }
    cv_.notify_one();
  }
  std::lock_guard lock(mu_);
  dispatch_done_ = true;
  cv_.notify_all();
}

void BenchRun::CancelAll() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  for (CompletionClient* client : clients_) client->Cancel();
  cv_.notify_all();
}

void BenchRun::PrintProgress(bool final_line) {
  if (options_.progress == nullptr) return;
  const double elapsed = std::chrono::duration<double>(SteadyClock::now() - start_).count();
  *options_.progress << fmt::format(
      "\rbench: {:.1f}/{:.1f} s  sent {}  done {}  failed {}  in flight {}  {:.0f} output tok/s ",
      std::min(elapsed, options_.duration_seconds), options_.duration_seconds, sent_.load(),
      completed_.load(), failed_.load(), in_flight_.load(),
      elapsed > 0 ? static_cast<double>(output_tokens_.load()) / elapsed : 0.0);
  if (final_line) *options_.progress << "\n";
  options_.progress->flush();
}

// Prints progress and cancels what is still running once the drain time is over or the
// caller's cancel flag is set.
void BenchRun::Watch() {
  const SteadyClock::time_point cancel_at = deadline_ + ToDuration(options_.drain_timeout_seconds);
  SteadyClock::time_point next_print = start_;
  bool cancelled = false;
  while (!finished_) {
    const SteadyClock::time_point now = SteadyClock::now();
    if (now >= next_print) {
      PrintProgress(false);
      next_print = now + ToDuration(options_.progress_interval_seconds);
    }
    const bool cancel_requested = options_.cancel != nullptr && options_.cancel->load();
    if (!cancelled && (now >= cancel_at || cancel_requested)) {
      CancelAll();
      cancelled = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  PrintProgress(true);
}

BenchReport BenchRun::Run() {
  start_ = SteadyClock::now();
  deadline_ = start_ + ToDuration(options_.duration_seconds);
  // Cancelled before it began: no request may start, not even before the watcher looks.
  if (options_.cancel != nullptr && options_.cancel->load()) cancelled_ = true;
  std::thread watcher([this] { Watch(); });
  if (options_.workload.mode == ArrivalMode::kClosedLoop) {
    for (int32_t i = 0; i < options_.concurrency; ++i) {
      workers_.emplace_back([this] { Worker(/*closed_loop=*/true); });
    }
  } else {
    Dispatch();
  }
  for (std::thread& worker : workers_) worker.join();
  const double elapsed = std::chrono::duration<double>(SteadyClock::now() - start_).count();
  finished_ = true;
  watcher.join();
  BenchReport report = Aggregate(outcomes_, elapsed);
  report.priorities = ReportByPriority(outcomes_, options_.slo);
  report.url = options_.url;
  report.model = model_;
  if (options_.keep_outcomes) report.outcomes = std::move(outcomes_);
  return report;
}

}  // namespace

Result<BenchReport> RunBench(const BenchOptions& options) {
  GS_RETURN_IF_ERROR(ValidateBenchOptions(options));
  GS_ASSIGN_OR_RETURN(ServerUrl url, ParseServerUrl(options.url));
  std::string model = options.model;
  if (model.empty()) {
    GS_ASSIGN_OR_RETURN(model, FetchFirstModel(url, options.client.connect_timeout_seconds));
  }
  BenchOptions run_options = options;
  run_options.workload.duration_seconds = options.duration_seconds;
  BenchRun run(run_options, std::move(url), std::move(model));
  return run.Run();
}

}  // namespace gpuscale::loadgen
