// Speed goals of the simulator inputs (the simulator targets >= 1,000,000 simulated requests
// per second, so neither reading traces nor asking the replica model may dominate):
//   - parse the 19k-row Azure conv trace in a few ms;
//   - rate-scale it x20 (387k requests) in well under a second;
//   - answer a prefill / decode-step query in tens of nanoseconds.
// Run: build/bench/trace_bench
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/replica_model.h"
#include "sim/trace.h"

namespace {

std::string ReadTrace(const char* name) {
  std::ifstream in(std::string(GPUSCALE_DATA_DIR) + "/traces/" + name, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void BM_ParseTrace(benchmark::State& state, const char* name) {
  const std::string text = ReadTrace(name);
  size_t rows = 0;
  for (auto _ : state) {
    auto trace = gpuscale::sim::ParseTrace(text, {});
    if (!trace) state.SkipWithError(trace.error().ToString().c_str());
    rows = trace ? trace->requests.size() : 0;
    benchmark::DoNotOptimize(trace);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * rows));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK_CAPTURE(BM_ParseTrace, azure_conv, "AzureLLMInferenceTrace_conv.csv")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ParseTrace, mooncake, "mooncake_conversation_trace.jsonl")
    ->Unit(benchmark::kMillisecond);

void BM_TransformTraceX20(benchmark::State& state) {
  auto trace = gpuscale::sim::ParseTrace(ReadTrace("AzureLLMInferenceTrace_conv.csv"), {});
  if (!trace) return state.SkipWithError(trace.error().ToString().c_str());
  for (auto _ : state) {
    auto scaled = gpuscale::sim::TransformTrace(*trace, {.rate_scale = 20, .time_compress = 1});
    benchmark::DoNotOptimize(scaled);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * trace->requests.size() * 20));
}
BENCHMARK(BM_TransformTraceX20)->Unit(benchmark::kMillisecond);

void BM_ReplicaModelQueries(benchmark::State& state) {
  auto model = gpuscale::sim::MakeReplicaModel({});
  if (!model) return state.SkipWithError(model.error().ToString().c_str());
  int64_t i = 0;
  for (auto _ : state) {
    const int batch = static_cast<int>(i % 256) + 1;
    benchmark::DoNotOptimize((*model)->DecodeStepSeconds(batch, batch * 400));
    benchmark::DoNotOptimize((*model)->PrefillSeconds(i % 8192 + 1));
    ++i;
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_ReplicaModelQueries);

}  // namespace

BENCHMARK_MAIN();
