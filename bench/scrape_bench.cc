// One tick's replica scrapes, the old path against the new, side by side in one run:
//   old: a 16-thread pool, each scrape a fresh connection (metrics::ScrapeMetrics, what the
//        daemon's MetricCollector did before the async scraper);
//   new: metrics::ScrapePool, every scrape a coroutine on the calling thread over connections
//        kept from one tick to the next;
//   new + filter: the same, parsing only the families a target policy's service reads
//        (ServiceMetricView::AddReadFamilies: what the daemon does now).
// The replicas are in-process `gpuscale emulate` servers (vLLM's /metrics, ~17 KB each), one
// port each; a tick scrapes each once. Reported: ms per tick (median of the ticks), the
// scraping threads' CPU per tick (not the replicas'), connections opened, and new/old ratios.
// Run: build/bench/scrape_bench [replicas=200] [ticks=20]
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/metric_collector.h"
#include "daemon/service_metric_view.h"
#include "emulator/emulator_server.h"
#include "scrape/scraper.h"

namespace {

using gpuscale::Result;
namespace metrics = gpuscale::metrics;

// CPU of the calling thread: the scraper's own cost (the replicas run in this process too,
// on their own threads, so process CPU would count their rendering as well).
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Timing {
  double median_ms = 0;
  double cpu_ms = 0;  // per tick: the scraping threads' CPU
  size_t failures = 0;
};

// `tick` returns its failures and adds the CPU seconds of any helper threads to `extra_cpu`.
template <typename Tick>
Timing Measure(int ticks, Tick tick, const std::atomic<double>* extra_cpu = nullptr) {
  std::vector<double> ms;
  Timing t;
  const double cpu0 = ThreadCpuSeconds();
  for (int i = 0; i < ticks; ++i) {
    const auto start = std::chrono::steady_clock::now();
    t.failures += tick();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  const double extra = extra_cpu != nullptr ? extra_cpu->load() : 0.0;
  t.cpu_ms = (ThreadCpuSeconds() - cpu0 + extra) * 1000 / ticks;
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int replicas = argc > 1 ? std::atoi(argv[1]) : 200;
  const int ticks = argc > 2 ? std::atoi(argv[2]) : 20;
  std::vector<std::unique_ptr<gpuscale::emulator::EmulatorServer>> servers;
  std::vector<std::string> urls;
  for (int i = 0; i < replicas; ++i) {
    gpuscale::emulator::EmulatorOptions options;
    options.startup_seconds = 0;
    Result<std::unique_ptr<gpuscale::emulator::EmulatorServer>> server =
        gpuscale::emulator::EmulatorServer::Start(options);
    if (!server) {
      fmt::print(stderr, "cannot start replica {}: {}\n", i, server.error().ToString());
      return 1;
    }
    urls.push_back(fmt::format("http://127.0.0.1:{}/metrics", (*server)->port()));
    servers.push_back(std::move(*server));
  }
  metrics::ScrapeOptions options;
  std::atomic<double> worker_cpu{0};
  const Timing old_path = Measure(ticks, [&] {
    size_t failed = 0;
    std::vector<Result<metrics::Exposition>> results(urls.size(), gpuscale::Unavailable(""));
    gpuscale::daemon::RunParallel(urls.size(), 16, [&](size_t i) {
      const double start = ThreadCpuSeconds();
      results[i] = metrics::ScrapeMetrics(urls[i], options);
      double cpu = worker_cpu.load();
      while (!worker_cpu.compare_exchange_weak(cpu, cpu + ThreadCpuSeconds() - start)) {
      }
    });
    for (const auto& r : results) failed += r ? 0 : 1;
    return failed;
  }, &worker_cpu);
  metrics::ScrapePool pool;
  const Timing new_path = Measure(ticks, [&] {
    size_t failed = 0;
    for (const auto& r : pool.ScrapeAll(urls, options)) failed += r ? 0 : 1;
    return failed;
  });
  std::set<std::string, std::less<>> families;
  gpuscale::daemon::ServiceMetricView::AddReadFamilies({"vllm:num_requests_waiting"}, families);
  metrics::ScrapeOptions filtered = options;
  filtered.parse.only_families = &families;
  const Timing filtered_path = Measure(ticks, [&] {
    size_t failed = 0;
    for (const auto& r : pool.ScrapeAll(urls, filtered)) failed += r ? 0 : 1;
    return failed;
  });
  fmt::print("{} replicas, {} ticks, one scrape of each per tick\n", replicas, ticks);
  fmt::print("{:<36} {:>10} {:>12} {:>12} {:>9}\n", "path", "ms/tick", "cpu ms/tick",
             "connections", "failures");
  fmt::print("{:<36} {:>10.1f} {:>12.1f} {:>12} {:>9}\n", "old: 16 threads, connect per scrape",
             old_path.median_ms, old_path.cpu_ms, replicas * ticks, old_path.failures);
  fmt::print("{:<36} {:>10.1f} {:>12.1f} {:>12} {:>9}\n", "new: ScrapePool, kept connections",
             new_path.median_ms, new_path.cpu_ms, pool.connections_opened(), new_path.failures);
  fmt::print("{:<36} {:>10.1f} {:>12.1f} {:>12} {:>9}\n", "new + only the families read",
             filtered_path.median_ms, filtered_path.cpu_ms, pool.connections_opened(),
             filtered_path.failures);
  fmt::print("new/old: time {:.2f}x, cpu {:.2f}x\n", new_path.median_ms / old_path.median_ms,
             new_path.cpu_ms / old_path.cpu_ms);
  fmt::print("new + filter/old: time {:.2f}x, cpu {:.2f}x\n",
             filtered_path.median_ms / old_path.median_ms, filtered_path.cpu_ms / old_path.cpu_ms);
  return 0;
}
