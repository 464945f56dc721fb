// The daemon's CPU per replica exposition at fleet scale: what one scrape of a `gpuscale
// fleet` replica (vLLM's /metrics, ~23 KB) costs the scraping thread, HTTP and parsing, with
// only the families a gauge policy's service reads kept (what Daemon::Collect asks for).
// The replicas are an in-process FleetServer on its own thread, whose CPU is not counted.
// Rows, one run, side by side:
//   old reads:   net::HttpGetPool with read_buffer_bytes = 0 -- every response read from
//                512 bytes up, doubling (Beast's default; what the pool did before) -- then
//                the same filtered parse;
//   kept buffer: the pool's default, a 64 KiB buffer per worker kept across requests;
//   daemon path: daemon::ReplicaScrapes::Collect, the daemon's tick (kept buffer);
//   parse only:  metrics::ParsePrometheusText of one exposition, filtered and whole.
// Reported: the calling thread's CPU per exposition (median of the rounds), and the ratio.
// Run: build/bench/scrape_cpu_bench [replicas=1000] [rounds=20]
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/replica_scrapes.h"
#include "daemon/service_metric_view.h"
#include "emulator/batch_engine.h"
#include "emulator/fleet_server.h"
#include "emulator/vllm_metrics.h"
#include "metrics/prometheus_text_parser.h"
#include "metrics/vllm_metric_names.h"
#include "net/http_get_pool.h"

namespace {

namespace daemon = gpuscale::daemon;
namespace metrics = gpuscale::metrics;
namespace net = gpuscale::net;
using gpuscale::Result;
using Families = std::set<std::string, std::less<>>;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Median over `rounds` of the calling thread's CPU per item, in microseconds. `round`
// handles `items` items and returns how many failed.
double MedianMicros(int rounds, size_t items, const std::function<size_t()>& round,
                    size_t& failed) {
  std::vector<double> micros;
  for (int i = 0; i < rounds; ++i) {
    const double start = ThreadCpuSeconds();
    failed += round();
    micros.push_back((ThreadCpuSeconds() - start) * 1e6 / static_cast<double>(items));
  }
  std::sort(micros.begin(), micros.end());
  return micros[micros.size() / 2];
}

// What the daemon parses for services whose target policy reads the waiting gauge.
Families DaemonFamilies() {
  Families families = {std::string(metrics::emulated::kGpuUtilizationRatio),
                       std::string(metrics::emulated::kGpuMemoryUsedBytes)};
  daemon::ServiceMetricView::AddReadFamilies({"vllm:num_requests_waiting"}, families);
  return families;
}

// GETs every replica's /metrics over `pool` and parses each body as the daemon does.
size_t HttpRound(net::HttpGetPool& pool, const std::vector<net::HttpGetRequest>& requests,
                 const metrics::ParseOptions& parse) {
  size_t failed = 0;
  for (Result<net::HttpGetResponse>& response : pool.GetAll(requests)) {
    if (!response || response->status != 200) {
      ++failed;
      continue;
    }
    Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(response->body, parse);
    failed += parsed ? 0 : 1;
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  const int replicas = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  Result<std::unique_ptr<gpuscale::emulator::FleetServer>> fleet =
      gpuscale::emulator::FleetServer::Start(gpuscale::emulator::FleetOptions{});
  if (!fleet) {
    fmt::print(stderr, "cannot start the fleet: {}\n", fleet.error().ToString());
    return 1;
  }
  std::vector<net::HttpGetRequest> requests;
  std::vector<daemon::ScrapeJob> jobs;
  for (int i = 0; i < replicas; ++i) {
    const std::string id = fmt::format("svc-{}", i);
    Result<int> port = (*fleet)->AddReplica(id);
    if (!port || !(*fleet)->SetLoad(id, 8, 3)) {
      fmt::print(stderr, "cannot add replica {}\n", id);
      return 1;
    }
    net::HttpGetRequest request;
    request.host = "127.0.0.1";
    request.port = *port;
    request.target = "/metrics";
    requests.push_back(request);
    jobs.push_back({id, fmt::format("http://127.0.0.1:{}/metrics", *port)});
  }
  const Families families = DaemonFamilies();
  metrics::ParseOptions parse{.skip_bad_lines = true};
  parse.only_families = &families;
  const size_t n = requests.size();
  size_t failed = 0;

  net::HttpGetPoolOptions grown;
  grown.read_buffer_bytes = 0;
  net::HttpGetPool old_pool(grown);
  net::HttpGetPool new_pool;
  HttpRound(old_pool, requests, parse);  // connections opened outside the measurement
  HttpRound(new_pool, requests, parse);
  const double old_us = MedianMicros(
      rounds, n, [&] { return HttpRound(old_pool, requests, parse); }, failed);
  const double new_us = MedianMicros(
      rounds, n, [&] { return HttpRound(new_pool, requests, parse); }, failed);

  daemon::ReplicaScrapes scrapes;
  auto tick = [&] {
    std::vector<daemon::ScrapeJob> round = jobs;
    daemon::ScrapeRound options;
    options.families = families;
    scrapes.Collect(round, std::move(options));
    size_t bad = 0;
    for (const daemon::ScrapeJob& job : round) bad += job.result ? 0 : 1;
    return bad;
  };
  tick();
  const double daemon_us = MedianMicros(rounds, n, tick, failed);

  const std::string text = gpuscale::emulator::RenderVllmMetrics(
      [] {
        gpuscale::emulator::EngineStats stats;
        stats.running = 8;
        stats.waiting = 3;
        stats.kv_capacity_tokens = 65536;
        stats.kv_used_tokens = 8 * 2048;
        return stats;
      }(),
      "fleet-model");
  constexpr size_t kParses = 20000;
  auto parse_round = [&](const metrics::ParseOptions& options) {
    return [&text, options] {
      size_t bad = 0;
      for (size_t i = 0; i < kParses; ++i)
        bad += metrics::ParsePrometheusText(text, options) ? 0 : 1;
      return bad;
    };
  };
  const double filtered_us = MedianMicros(5, kParses, parse_round(parse), failed);
  const double whole_us =
      MedianMicros(5, kParses, parse_round(metrics::ParseOptions{.skip_bad_lines = true}), failed);

  fmt::print("{} fleet replicas, {} rounds, {}-byte expositions; CPU of the scraping thread\n",
             replicas, rounds, text.size());
  fmt::print("{:<58} {:>12}\n", "path", "us/exposition");
  fmt::print("{:<58} {:>12.1f}\n", "old reads: 512 B growing per response, + filtered parse",
             old_us);
  fmt::print("{:<58} {:>12.1f}\n", "kept 64 KiB read buffer, + filtered parse", new_us);
  fmt::print("{:<58} {:>12.1f}\n", "daemon path: ReplicaScrapes::Collect (kept buffer)", daemon_us);
  fmt::print("{:<58} {:>12.1f}\n", "parse only, the daemon's families", filtered_us);
  fmt::print("{:<58} {:>12.1f}\n", "parse only, every family", whole_us);
  fmt::print("kept buffer / old reads: {:.2f}x the CPU; failures: {}\n", new_us / old_us, failed);
  return failed == 0 ? 0 : 1;
}
