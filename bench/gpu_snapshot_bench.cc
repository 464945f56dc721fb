// Snapshot latency per GPU backend: what one `gpuscale gpus` or one Monitor refresh costs.
//   BM_ParseNvidiaSmiCsv      the CSV parser alone (8 GPUs of text)
//   BM_SimulatedDefault       built-in inventory, no file
//   BM_SimulatedInventoryFile inventory file re-read and hashed on every query
//   BM_NvidiaSmiFakeScript    fork/exec of tests/fixtures/fake_nvidia_smi.sh (two runs per
//                             query: GPUs and compute apps); a floor for real nvidia-smi
//   BM_MonitorCacheHit        Monitor::Snapshot served from the TTL cache
// Run: build/bench/gpu_snapshot_bench
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/clock.h"
#include "gpu/nvidia_smi_parser.h"
#include "gpumon/monitor.h"
#include "gpumon/nvidia_smi_backend.h"
#include "gpumon/simulated_backend.h"

namespace {

using namespace gpuscale;
using namespace gpuscale::gpu;

std::string EightGpuCsv() {
  std::string text;
  for (int i = 0; i < 8; ++i) {
    text += fmt::format(
        "{}, GPU-{:08x}-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, "
        "81559, {}, {}, {}, {}, {:.2f}\n",
        i, i, 1000 * i, 81559 - 1000 * i, 10 * i, 30 + i, 70.5 + i);
  }
  return text;
}

void BM_ParseNvidiaSmiCsv(benchmark::State& state) {
  const std::string text = EightGpuCsv();
  for (auto _ : state) {
    auto gpus = ParseNvidiaSmiCsv(text);
    benchmark::DoNotOptimize(gpus);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ParseNvidiaSmiCsv);

void BM_SimulatedDefault(benchmark::State& state) {
  SimulatedBackend backend;
  for (auto _ : state) {
    auto snapshot = backend.Query(Seconds{0});
    benchmark::DoNotOptimize(snapshot);
  }
}
BENCHMARK(BM_SimulatedDefault);

void BM_SimulatedInventoryFile(benchmark::State& state) {
  char path[] = "/tmp/gpuscale_bench_inventory_XXXXXX";
  close(mkstemp(path));
  {
    std::ofstream out(path);
    out << "gpus:\n";
    for (int i = 0; i < 8; ++i) out << fmt::format("  - {{index: {}, memory_used_mb: {}}}\n", i, i);
  }
  auto backend = SimulatedBackend::FromFile(path);
  if (!backend) {
    state.SkipWithError(backend.error().ToString().c_str());
  } else {
    for (auto _ : state) {
      auto snapshot = (*backend)->Query(Seconds{0});
      benchmark::DoNotOptimize(snapshot);
    }
  }
  std::remove(path);
}
BENCHMARK(BM_SimulatedInventoryFile);

void BM_NvidiaSmiFakeScript(benchmark::State& state) {
  NvidiaSmiBackend backend(GPUSCALE_SOURCE_DIR "/tests/fixtures/fake_nvidia_smi.sh");
  for (auto _ : state) {
    auto snapshot = backend.Query(Seconds{0});
    if (!snapshot) {
      state.SkipWithError(snapshot.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(snapshot);
  }
}
BENCHMARK(BM_NvidiaSmiFakeScript)->Unit(benchmark::kMillisecond);

void BM_MonitorCacheHit(benchmark::State& state) {
  SimulatedBackend backend;
  ManualClock clock;
  Monitor monitor(backend, clock);
  (void)monitor.Snapshot();
  for (auto _ : state) {
    auto snapshot = monitor.Snapshot();
    benchmark::DoNotOptimize(snapshot);
  }
}
BENCHMARK(BM_MonitorCacheHit);

}  // namespace

BENCHMARK_MAIN();
