// One control-loop tick over a fleet: 10,000 services, each with its own policy instance,
// each evaluated once. Goal: the whole tick in < 10 ms, so the policy layer never dominates
// a 15 s polling interval even at fleet scale. Families: rules (3 rules, 8 replicas of
// per-replica samples), ratio, capability (2 capability sets, 4 groups) and fixed_elastic,
// a quarter each. Run: build/bench/policy_tick_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "scale/capability_policy.h"
#include "scale/fixed_elastic_policy.h"
#include "scale/ratio_policy.h"
#include "scale/rules_policy.h"

namespace gpuscale::scale {
namespace {

constexpr int kServices = 10'000;

std::unique_ptr<Policy> MakeRules() {
  auto rule = [](const char* name, const char* metric, Comparator c, double threshold, int step) {
    ScalingRule r;
    r.name = name;
    r.metric = metric;
    r.comparator = c;
    r.threshold = threshold;
    r.step_size = step;
    r.cooldown = Seconds{60};
    r.min_replicas = 1;
    r.max_replicas = 16;
    return r;
  };
  return std::make_unique<RulesPolicy>(RulesPolicyConfig{
      1,
      16,
      {rule("queue-high", "vllm:num_requests_waiting", Comparator::kGreaterThan, 10, 1),
       rule("queue-empty", "vllm:num_requests_waiting", Comparator::kLessThan, 1, -1),
       rule("gpu-hot", "gpu_utilization_ratio", Comparator::kGreaterThanOrEqual, 0.95, 2)}});
}

ScalingInput MakeInput(int service) {
  ScalingInput input;
  input.current_replicas = 8;
  input.ready_replicas = 8;
  for (int r = 0; r < 8; ++r) {
    input.metrics["vllm:num_requests_waiting"].per_replica.push_back((service + r) % 17);
    input.metrics["gpu_utilization_ratio"].per_replica.push_back(0.5 + 0.06 * r);
  }
  input.tasks = {{{}, 10 + service % 40, 8}, {{"gpu"}, service % 30, 4}};
  input.groups = {{"c1", "cpu-pool", {}, 2},
                  {"g1", "gpu-pool", {"gpu"}, 1},
                  {"g2", "gpu-pool", {"gpu"}, 1},
                  {"s1", "cloud", {}, 1}};
  input.adapters = {{"cpu-pool", 4, 2, {}},
                    {"gpu-pool", 4, 1, {"gpu"}},
                    {"on-prem", 1, 2, {}},
                    {"cloud", 4, 1, {}}};
  return input;
}

std::unique_ptr<Policy> MakePolicy(int service) {
  switch (service % 4) {
    case 0:
      return MakeRules();
    case 1:
      return std::make_unique<RatioPolicy>(RatioPolicyConfig{1, 16, 10, 1, 1});
    case 2:
      return std::make_unique<CapabilityPolicy>(CapabilityPolicyConfig{0, 16, 5, 0.5});
    default:
      return std::make_unique<FixedElasticPolicy>(FixedElasticPolicyConfig{1, 8, 10, 1});
  }
}

// Evaluates `kServices` policies once per iteration; `family` < 0 mixes the four families.
void RunTick(benchmark::State& state, int family) {
  std::vector<std::unique_ptr<Policy>> policies;
  std::vector<ScalingInput> inputs;
  for (int s = 0; s < kServices; ++s) {
    policies.push_back(MakePolicy(family < 0 ? s : family));
    inputs.push_back(MakeInput(s));
  }
  double now = 0;
  for (auto _ : state) {
    now += 15;  // one polling interval per tick, so cooldowns expire as in production
    long long desired = 0;
    for (int s = 0; s < kServices; ++s) {
      inputs[s].now = Seconds{now};
      desired += policies[s]->Evaluate(inputs[s]).desired_replicas;
    }
    benchmark::DoNotOptimize(desired);
  }
  state.counters["services"] = kServices;
  // Evaluations per second of CPU time; 1e6 / this = microseconds per policy.
  state.counters["policies_per_s"] = benchmark::Counter(
      static_cast<double>(kServices), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_PolicyTick10kServices(benchmark::State& state) { RunTick(state, -1); }
void BM_PolicyTick10kRules(benchmark::State& state) { RunTick(state, 0); }
void BM_PolicyTick10kRatio(benchmark::State& state) { RunTick(state, 1); }
void BM_PolicyTick10kCapability(benchmark::State& state) { RunTick(state, 2); }
void BM_PolicyTick10kFixedElastic(benchmark::State& state) { RunTick(state, 3); }
BENCHMARK(BM_PolicyTick10kServices)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PolicyTick10kRules)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PolicyTick10kRatio)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PolicyTick10kCapability)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PolicyTick10kFixedElastic)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpuscale::scale

BENCHMARK_MAIN();
