// Speed of the emulator's and load generator's hot paths: one engine step with a full batch
// (the scheduler thread does this every few ms), rendering /metrics, and parsing an SSE
// stream (the bench does this for every token). Goals: a step well under 50 us at batch 64
// so the emulator's timing is not its own bottleneck; SSE parsing above 100 MB/s.
#include <benchmark/benchmark.h>

#include <string>

#include "emulator/batch_engine.h"
#include "emulator/openai_protocol.h"
#include "emulator/vllm_metrics.h"
#include "loadgen/sse_parser.h"

namespace gpuscale {
namespace {

void BM_BatchEngineStep(benchmark::State& state) {
  emulator::EngineConfig config;
  config.max_batch_size = static_cast<int32_t>(state.range(0));
  config.kv_cache_tokens = 1 << 30;
  emulator::BatchEngine engine(config);
  double now = 0;
  const auto fill = [&] {
    for (int i = 0; i < config.max_batch_size; ++i) {
      (void)engine.Submit(100, 1 << 16, Seconds{now});
    }
  };
  fill();
  for (auto _ : state) {
    if (!engine.NextStepEnd()) fill();  // every request finished: start a new batch
    now = engine.NextStepEnd()->count();
    engine.Advance(Seconds{now});
  }
  state.SetItemsProcessed(state.iterations() * config.max_batch_size);  // tokens
}
BENCHMARK(BM_BatchEngineStep)->Arg(1)->Arg(64)->Arg(256);

void BM_RenderVllmMetrics(benchmark::State& state) {
  emulator::EngineStats stats;
  for (int i = 0; i < 1000; ++i) stats.e2e_seconds.Observe(i * 0.01);
  for (auto _ : state) benchmark::DoNotOptimize(emulator::RenderVllmMetrics(stats, "model"));
}
BENCHMARK(BM_RenderVllmMetrics);

void BM_SseParserFeed(benchmark::State& state) {
  const emulator::ResponseHeader header{"cmpl-1", 1700000000, "model",
                                        emulator::Endpoint::kCompletions};
  std::string stream;
  for (int i = 0; i < 1000; ++i) stream += emulator::StreamTokenEvent(header, 0, i, emulator::Finish::kNotYet);
  for (auto _ : state) {
    loadgen::SseParser parser;
    benchmark::DoNotOptimize(parser.Feed(stream));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(stream.size()));
}
BENCHMARK(BM_SseParserFeed);

}  // namespace
}  // namespace gpuscale
BENCHMARK_MAIN();
