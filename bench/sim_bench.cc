// Simulator speed (goal: >= 1,000,000 simulated requests per second of wall time on one core;
// the Azure conv trace at x20, ~387k requests, in well under a second).
//   build/bench/sim_bench --benchmark_counters_tabular=true
// items_per_second is simulated requests per wall-clock second. Trace parsing and rate
// scaling happen once, outside the timed loop.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "config/sim_config.h"
#include "sim/disagg.h"
#include "sim/replica_model.h"
#include "sim/replica_model_calibrated.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace {

using namespace gpuscale;

const sim::Trace& ScaledTrace(const char* file, double rate_scale) {
  static std::map<std::string, sim::Trace> cache;
  std::string key = std::string(file) + std::to_string(rate_scale);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::ifstream in(std::string(GPUSCALE_DATA_DIR) + "/traces/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto trace = sim::ParseTrace(text.str(), {});
  if (!trace) {
    fprintf(stderr, "cannot read trace %s: %s\n", file, trace.error().ToString().c_str());
    std::exit(1);
  }
  return cache[key] = sim::TransformTrace(*trace, {rate_scale, 1.0, 1});
}

void RunConfig(benchmark::State& state, const char* config_path, const char* trace_file,
               double rate_scale) {
  const sim::Trace& trace = ScaledTrace(trace_file, rate_scale);
  auto file = config::LoadSimConfigFile(std::string(GPUSCALE_SOURCE_DIR) + "/" + config_path);
  if (!file) {
    state.SkipWithError(file.error().ToString().c_str());
    return;
  }
  auto model = sim::MakeReplicaModel(file->sim.model);
  if (!model) {
    state.SkipWithError(model.error().ToString().c_str());
    return;
  }
  int64_t events = 0;
  for (auto _ : state) {
    auto policy = config::MakeSimPolicy(*file);
    auto result = sim::RunSimulation(file->sim, **model, std::move(policy->policy), trace,
                                     {.record_timeline = false, .progress = {}});
    benchmark::DoNotOptimize(result);
    events = result->report.events;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(trace.requests.size()));
  state.counters["requests"] = static_cast<double>(trace.requests.size());
  state.counters["events"] = static_cast<double>(events);
}

// A disaggregated config (sim/disagg.h): both pools run the config's model (one GPU per
// replica in the shipped examples), their `disagg` policies from the model's role profile.
void RunDisaggConfig(benchmark::State& state, const char* config_path, const char* trace_file,
                     double rate_scale) {
  const sim::Trace& trace = ScaledTrace(trace_file, rate_scale);
  auto file = config::LoadSimConfigFile(std::string(GPUSCALE_SOURCE_DIR) + "/" + config_path);
  if (!file || !file->sim.disaggregated) {
    state.SkipWithError(file ? "not a disaggregated config" : file.error().ToString().c_str());
    return;
  }
  sim::ReplicaModelConfig model_config = file->sim.model;
  model_config.tensor_parallel = file->sim.disaggregated->prefill.gpus_per_replica;
  auto model = sim::MakeReplicaModel(model_config);
  if (!model || file->sim.disaggregated->decode.gpus_per_replica != model_config.tensor_parallel) {
    state.SkipWithError("the bench runs pools of equal GPUs per replica");
    return;
  }
  const sim::DisaggModels models{model->get(), model->get(),
                                 sim::FindModelSpec(model_config.model)->KvBytesPerToken()};
  int64_t events = 0;
  for (auto _ : state) {
    // Not timed: the policies' role profile is a load test of the model (sim/role_capacity.h),
    // run once per `simulate`, not per simulated request.
    state.PauseTiming();
    auto prefill = config::MakeDisaggPoolPolicy(*file, scale::PoolRole::kPrefill, **model);
    auto decode = config::MakeDisaggPoolPolicy(*file, scale::PoolRole::kDecode, **model);
    state.ResumeTiming();
    auto result = sim::RunDisaggSimulation(file->sim, models, std::move(prefill->policy),
                                           std::move(decode->policy), trace,
                                           {.record_timeline = false, .progress = {}});
    benchmark::DoNotOptimize(result);
    events = result->report.total.events;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(trace.requests.size()));
  state.counters["requests"] = static_cast<double>(trace.requests.size());
  state.counters["events"] = static_cast<double>(events);
}

void BM_ConvX20Slo(benchmark::State& state) {
  RunConfig(state, "examples/sim/conv/slo.yaml", "AzureLLMInferenceTrace_conv.csv", 20);
}
void BM_CodeX40Slo(benchmark::State& state) {
  RunConfig(state, "examples/sim/code/slo.yaml", "AzureLLMInferenceTrace_code.csv", 40);
}
void BM_ConvX20Hpa(benchmark::State& state) {
  RunConfig(state, "examples/sim/conv/hpa.yaml", "AzureLLMInferenceTrace_conv.csv", 20);
}

// Aggregated and disaggregated at the same GPU budget on the same trace, one run of the
// bench: the disaggregated engine's speed next to the aggregated one's.
void BM_ConvX20AggregatedBudget64(benchmark::State& state) {
  RunConfig(state, "examples/sim/disagg/conv-aggregated.yaml", "AzureLLMInferenceTrace_conv.csv",
            20);
}
void BM_ConvX20Disagg(benchmark::State& state) {
  RunDisaggConfig(state, "examples/sim/disagg/conv.yaml", "AzureLLMInferenceTrace_conv.csv", 20);
}

BENCHMARK(BM_ConvX20Slo)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_CodeX40Slo)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_ConvX20Hpa)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_ConvX20AggregatedBudget64)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_ConvX20Disagg)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace

BENCHMARK_MAIN();
