// The body of GET /v1/services for 1,000 services, the old way and the new side by side in
// one run (issue 28: under 50 ms p99 at 1,000 services while the loop runs):
//  - Tree: what the handler did before, per request: copy the daemon's views (under its
//    lock), build a JSON tree of every service (ServiceJson, its spec a copy of a cached
//    tree) and print it.
//  - Text: what it does now: print the daemon's shared list (Daemon::ServicesSnapshot, no
//    copy) with each spec's text printed once and spliced in (api/services_list_json.h).
// Both bodies are the same bytes (ServicesListBodyTest). The services are those
// scripts/fleet-scale configures: a fleet engine, a target policy on a vLLM gauge, and a
// last decision with one detail line.
// Run: build/bench/services_list_bench
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "api/json_views.h"
#include "api/services_list_json.h"
#include "daemon_api/daemon_api.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::api {
namespace {

constexpr int kServices = 1'000;

std::vector<daemon::ServiceView> Fleet() {
  std::vector<daemon::ServiceView> views;
  for (int i = 0; i < kServices; ++i) {
    daemon::ServiceView v;
    v.config.name = "s" + std::to_string(10000 + i).substr(1);
    v.config.engine = "fleet";
    v.config.fleet_url = "http://127.0.0.1:9300";
    v.config.command = {"unused"};
    v.config.gpus_per_replica = 0;
    v.config.min_replicas = v.config.max_replicas = 10;
    v.config.policy_family = "target";
    v.config.policy_yaml =
        "family: target\ntarget:\n  metrics:\n    - name: 'vllm:num_requests_waiting'\n"
        "      type: AverageValue\n      average_value: 5\n";
    v.spec_yaml = daemon::ServiceConfigToYaml(v.config);
    v.policy_family = "target";
    v.desired_replicas = v.replicas = v.ready_replicas = 10;
    const std::string why =
        "vllm:num_requests_waiting = 0 (average of 10 replicas) vs average_value 5 -> 0";
    v.last_reason = "hold at 10: " + why +
                    "; scale-down stabilization window (300 s) holds the highest recent "
                    "recommendation 10";
    v.last_details = {why};
    v.last_decision_at = Seconds{1795705883.5 + i};
    v.created_at = Seconds{1795705800};
    views.push_back(std::move(v));
  }
  return views;
}

void BM_ServicesListTree(benchmark::State& state) {
  const std::vector<daemon::ServiceView> views = Fleet();
  size_t bytes = 0;
  for (auto _ : state) {
    const std::vector<daemon::ServiceView> copy = views;  // ListServices' copy
    Json list = Json::array();
    for (const daemon::ServiceView& s : copy) list.push_back(ServiceJson(s));
    std::string body =
        Json{{"services", std::move(list)}}.dump(2, ' ', false, Json::error_handler_t::replace) +
        "\n";
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["body_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ServicesListTree)->Unit(benchmark::kMillisecond)->MinTime(2);

void BM_ServicesListText(benchmark::State& state) {
  const std::vector<daemon::ServiceView> views = Fleet();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = ServicesListBody(views);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["body_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ServicesListText)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace
}  // namespace gpuscale::api

BENCHMARK_MAIN();
