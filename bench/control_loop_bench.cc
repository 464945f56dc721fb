// One control-loop tick of the daemon's per-service code (daemon::ServiceRuntime) over a
// fleet: 1,000 services x 10 ready replicas = 10,000 replica scrapes recorded into metric
// windows, 1,000 target-policy decisions and reconciles. Adapters are in memory: a
// testing::FakeOrchestrator per service and synthetic vLLM expositions (the emulator's
// renderer, parsed with the families the daemon keeps for the policy) -- no HTTP and no
// SQLite, so this measures the CPU cost the daemon adds on top of scraping I/O and
// persistence. Goal (issue 28): under 10 ms per tick.
//
// Two fleets side by side: services whose policy reads a vLLM gauge (the common case: only
// the latest values, no window), and services whose policy reads every windowed service
// value (success and token rates, TTFT/TPOT/e2e ratios) -- what every service cost before
// the view kept windows only for the values its policy reads. The ratio of the two is the
// saving for gauge policies.
// Run: build/bench/control_loop_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/service_metric_view.h"
#include "daemon/service_policy.h"
#include "daemon/service_runtime.h"
#include "emulator/vllm_metrics.h"
#include "metrics/prometheus_text_parser.h"
#include "scale/metric_names.h"
#include "testing/fake_orchestrator.h"

namespace gpuscale::daemon {
namespace {

namespace names = scale::metric_names;

constexpr int kServices = 1'000;
constexpr int kReplicas = 10;

// The metrics a policy of each fleet reads.
const std::vector<std::string>& GaugeMetrics() {
  static const auto* k = new std::vector<std::string>{std::string(names::kWaiting)};
  return *k;
}
const std::vector<std::string>& WindowedMetrics() {
  static const auto* k = new std::vector<std::string>{std::string(names::kWaiting),
                                                      std::string(names::kSuccessRate30s),
                                                      std::string(names::kPromptTokensRate30s),
                                                      std::string(names::kGenerationTokensRate30s),
                                                      std::string(names::kTtftViolationRatio),
                                                      std::string(names::kTpotViolationRatio),
                                                      std::string(names::kE2eOver5sRatio)};
  return *k;
}

metrics::Exposition VllmExposition(const std::vector<std::string>& policy_metrics) {
  emulator::EngineStats stats;
  stats.running = 8;
  stats.waiting = 5;
  stats.kv_used_tokens = 4000;
  stats.kv_capacity_tokens = 8192;
  stats.requests_finished_total = 1000;
  // As the daemon parses scrapes: only the families the view and the policy read.
  std::set<std::string, std::less<>> families;
  ServiceMetricView::AddReadFamilies(policy_metrics, families);
  metrics::ParseOptions options;
  options.only_families = &families;
  return *metrics::ParsePrometheusText(emulator::RenderVllmMetrics(stats, "llama"), options);
}

// A target policy on every metric of `policy_metrics`, each at a target it meets, so the
// fleet holds steady (the realistic case: most services do not change on a given tick).
ServiceConfig Service(int index, const std::vector<std::string>& policy_metrics) {
  ServiceConfig s;
  s.name = "svc-" + std::to_string(index);
  s.command = {"serve"};
  s.min_replicas = 1;
  s.max_replicas = 20;
  s.policy_yaml = "family: target\ntarget:\n  metrics:\n";
  for (const std::string& metric : policy_metrics) {
    // 10 replicas x 5 waiting / target 5 = 10 replicas; a service value at 1e9 never asks
    // for more.
    const bool gauge = metric == names::kWaiting;
    s.policy_yaml +=
        "    - name: '" + metric + "'\n      type: " +
        (gauge ? "AverageValue\n      average_value: 5\n" : "Value\n      value: 1000000000\n");
  }
  return s;
}

struct Fleet {
  std::vector<std::unique_ptr<testing::FakeOrchestrator>> orchestrators;
  std::vector<std::unique_ptr<ServiceRuntime>> runtimes;
  metrics::Exposition exposition;
};

std::unique_ptr<Fleet> MakeFleet(const std::vector<std::string>& policy_metrics) {
  auto fleet = std::make_unique<Fleet>();
  fleet->exposition = VllmExposition(policy_metrics);
  for (int i = 0; i < kServices; ++i) {
    auto orch = std::make_unique<testing::FakeOrchestrator>(kReplicas + 10, Seconds{0});
    ServiceConfig s = Service(i, policy_metrics);
    auto policy = BuildServicePolicy(s, {});
    if (!policy) std::abort();
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

void RunTicks(benchmark::State& state, const std::vector<std::string>& policy_metrics) {
  std::unique_ptr<Fleet> fleet = MakeFleet(policy_metrics);
  double now = 1;
  int64_t replicas = 0;
  for (auto _ : state) {
    state.PauseTiming();  // scrape results arrive by move in the daemon; copies are setup
    std::vector<ServiceObservation> observations;
    observations.reserve(kServices);
    for (const auto& orch : fleet->orchestrators) observations.push_back(Observe(*orch, *fleet));
    state.ResumeTiming();
    for (int i = 0; i < kServices; ++i) {
      const ServiceTickResult& r =
          fleet->runtimes[i]->Tick(Seconds{now}, observations[i], nullptr, {});
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

// Policies on a gauge: no windows (the common case).
void BM_ControlLoopTick(benchmark::State& state) { RunTicks(state, GaugeMetrics()); }
BENCHMARK(BM_ControlLoopTick)->Unit(benchmark::kMillisecond)->MinTime(2);

// Policies reading every windowed value: every window per replica per tick (the cost of
// every service before windows followed the policy).
void BM_ControlLoopTickEveryWindow(benchmark::State& state) { RunTicks(state, WindowedMetrics()); }
BENCHMARK(BM_ControlLoopTickEveryWindow)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace
}  // namespace gpuscale::daemon

BENCHMARK_MAIN();
