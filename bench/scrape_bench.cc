// One tick's replica scrapes, the old path against the new, side by side in one run:
//   old: a 16-thread pool, each scrape a fresh connection (metrics::ScrapeMetrics, what the
//        daemon's MetricCollector did before the async scraper);
//   new: metrics::ScrapePool, every scrape a coroutine on the calling thread over connections
//        kept from one tick to the next (what the daemon does now).
// The replicas are in-process `gpuscale emulate` servers (vLLM's /metrics, ~17 KB each), one
// port each; a tick scrapes each once. Reported: ms per tick (median of the ticks), process
// CPU per tick, connections opened, and new/old ratios.
// Run: build/bench/scrape_bench [replicas=200] [ticks=20]
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "daemon/metric_collector.h"
#include "emulator/emulator_server.h"
#include "metrics/scraper.h"

namespace {

using gpuscale::Result;
namespace metrics = gpuscale::metrics;

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct Timing {
  double median_ms = 0;
  double cpu_ms = 0;  // per tick
  size_t failures = 0;
};

template <typename Tick>
Timing Measure(int ticks, Tick tick) {
  std::vector<double> ms;
  Timing t;
  const double cpu0 = CpuSeconds();
  for (int i = 0; i < ticks; ++i) {
    const auto start = std::chrono::steady_clock::now();
    t.failures += tick();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  t.cpu_ms = (CpuSeconds() - cpu0) * 1000 / ticks;
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
  const Timing old_path = Measure(ticks, [&] {
    size_t failed = 0;
    std::vector<Result<metrics::Exposition>> results(urls.size(), gpuscale::Unavailable(""));
    gpuscale::daemon::RunParallel(urls.size(), 16, [&](size_t i) {
      results[i] = metrics::ScrapeMetrics(urls[i], options);
    });
    for (const auto& r : results) failed += r ? 0 : 1;
    return failed;
  });
  metrics::ScrapePool pool;
  const Timing new_path = Measure(ticks, [&] {
    size_t failed = 0;
    for (const auto& r : pool.ScrapeAll(urls, options)) failed += r ? 0 : 1;
    return failed;
  });
  fmt::print("{} replicas, {} ticks, one scrape of each per tick\n", replicas, ticks);
  fmt::print("{:<36} {:>10} {:>12} {:>12} {:>9}\n", "path", "ms/tick", "cpu ms/tick",
             "connections", "failures");
  fmt::print("{:<36} {:>10.1f} {:>12.1f} {:>12} {:>9}\n", "old: 16 threads, connect per scrape",
             old_path.median_ms, old_path.cpu_ms, replicas * ticks, old_path.failures);
  fmt::print("{:<36} {:>10.1f} {:>12.1f} {:>12} {:>9}\n", "new: ScrapePool, kept connections",
             new_path.median_ms, new_path.cpu_ms, pool.connections_opened(), new_path.failures);
  fmt::print("new/old: time {:.2f}x, cpu {:.2f}x\n", new_path.median_ms / old_path.median_ms,
             new_path.cpu_ms / old_path.cpu_ms);
  return 0;
}
