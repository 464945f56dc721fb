// One control-loop tick of the daemon's per-service code (daemon::ServiceRuntime) over a
// fleet: 1,000 services x 10 ready replicas = 10,000 replica scrapes recorded into metric
// windows, 1,000 target-policy decisions and reconciles. Adapters are in memory: a
// testing::FakeOrchestrator per service and synthetic vLLM expositions (the emulator's
// renderer, parsed once with the families the daemon keeps) -- no HTTP and no SQLite, so this measures the CPU cost the daemon
// adds on top of scraping I/O and persistence. Goal: well under 1 s per tick (a 15 s loop).
// Run: build/bench/control_loop_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/service_metric_view.h"
#include "daemon/service_policy.h"
#include "daemon/service_runtime.h"
#include "emulator/vllm_metrics.h"
#include "metrics/prometheus_text_parser.h"
#include "testing/fake_orchestrator.h"

namespace gpuscale::daemon {
namespace {

constexpr int kServices = 1'000;
constexpr int kReplicas = 10;

metrics::Exposition VllmExposition(int waiting) {
  emulator::EngineStats stats;
  stats.running = 8;
  stats.waiting = waiting;
  stats.kv_used_tokens = 4000;
  stats.kv_capacity_tokens = 8192;
  stats.requests_finished_total = 1000;
  // As the daemon parses scrapes: only the families the view and the policy read.
  static const auto* families = [] {
    auto* f = new std::set<std::string, std::less<>>();
    ServiceMetricView::AddReadFamilies({"vllm:num_requests_waiting"}, *f);
    return f;
  }();
  metrics::ParseOptions options;
  options.only_families = families;
  return *metrics::ParsePrometheusText(emulator::RenderVllmMetrics(stats, "llama"), options);
}

ServiceConfig Service(int index) {
  ServiceConfig s;
  s.name = "svc-" + std::to_string(index);
  s.command = {"serve"};
  s.min_replicas = 1;
  s.max_replicas = 20;
  // 10 replicas x 5 waiting / target 5 = 10: the fleet holds steady (the realistic case:
  // most services do not change on a given tick).
  s.policy_yaml =
      "family: target\ntarget:\n  metrics:\n    - name: vllm:num_requests_waiting\n"
      "      type: AverageValue\n      average_value: 5\n";
  return s;
}

struct Fleet {
  std::vector<std::unique_ptr<testing::FakeOrchestrator>> orchestrators;
  std::vector<std::unique_ptr<ServiceRuntime>> runtimes;
  metrics::Exposition exposition = VllmExposition(5);
};

std::unique_ptr<Fleet> MakeFleet() {
  auto fleet = std::make_unique<Fleet>();
  for (int i = 0; i < kServices; ++i) {
    auto orch = std::make_unique<testing::FakeOrchestrator>(kReplicas + 10, Seconds{0});
    ServiceConfig s = Service(i);
    auto policy = BuildServicePolicy(s, {});
    auto runtime = std::make_unique<ServiceRuntime>(s, std::move(*policy), *orch);
    (void)runtime->SetManualReplicas(kReplicas);  // warm up to 10 ready replicas
    runtime->Tick(Seconds{0}, {}, nullptr, {});
    orch->Advance(Seconds{0});
    (void)runtime->SetManualReplicas(std::nullopt);
    fleet->orchestrators.push_back(std::move(orch));
    fleet->runtimes.push_back(std::move(runtime));
  }
  return fleet;
}

ServiceObservation Observe(const testing::FakeOrchestrator& orch, const Fleet& fleet) {
  ServiceObservation obs;
  for (const scale::ReplicaStatus& r : orch.ListReplicas()) {
    obs.replicas.push_back({r.id, {0}, r.phase == scale::ReplicaPhase::kReady, fleet.exposition});
  }
  return obs;
}

void BM_ControlLoopTick(benchmark::State& state) {
  std::unique_ptr<Fleet> fleet = MakeFleet();
  double now = 1;
  int64_t replicas = 0;
  for (auto _ : state) {
    state.PauseTiming();  // scrape results arrive by move in the daemon; copies are setup
    std::vector<ServiceObservation> observations;
    observations.reserve(kServices);
    for (const auto& orch : fleet->orchestrators) observations.push_back(Observe(*orch, *fleet));
    state.ResumeTiming();
    for (int i = 0; i < kServices; ++i) {
      ServiceTickResult r = fleet->runtimes[i]->Tick(Seconds{now}, observations[i], nullptr, {});
      replicas += r.tick.ready_replicas;
    }
    now += 15;
    state.PauseTiming();
    observations.clear();  // freeing 10,000 expositions is not part of a tick either
    state.ResumeTiming();
  }
  state.counters["services"] = kServices;
  state.counters["replicas_per_tick"] =
      benchmark::Counter(static_cast<double>(replicas) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_ControlLoopTick)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace
}  // namespace gpuscale::daemon

BENCHMARK_MAIN();
