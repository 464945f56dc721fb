// Allocation speed on a 10,000-GPU fleet: selection alone, and select + lease through the
// ledger (the daemon's path), with part of the fleet already leased. Goal: well under a
// control-loop tick (1 ms per allocation is comfortable).
//   build-alloc/bench/alloc_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "alloc/gpu_selector.h"
#include "alloc/lease_ledger.h"
#include "alloc/requirements.h"
#include "gpu/gpu_info.h"

namespace gpuscale::alloc {
namespace {

constexpr int kFleetGpus = 10000;
constexpr int kGpusPerNode = 8;

// Deterministic spread of free memory and utilization (a linear congruential sequence).
gpu::GpuSnapshot Fleet(int gpus, int gpus_per_node) {
  gpu::GpuSnapshot snapshot;
  snapshot.backend = "simulated";
  uint32_t state = 12345;
  auto next = [&state](uint32_t mod) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % mod;
  };
  for (int i = 0; i < gpus; ++i) {
    gpu::GpuInfo g;
    g.index = gpus_per_node > 0 ? i % gpus_per_node : i;
    g.node = gpus_per_node > 0 ? "node-" + std::to_string(i / gpus_per_node) : "";
    g.uuid = "GPU-" + std::to_string(i);
    g.name = "NVIDIA H100 80GB HBM3";
    g.memory_total_mb = 81559;
    g.memory_free_mb = static_cast<int64_t>(next(81559));
    g.memory_used_mb = 81559 - *g.memory_free_mb;
    g.utilization_percent = static_cast<double>(next(101));
    snapshot.gpus.push_back(std::move(g));
  }
  return snapshot;
}

SelectionRequest Request(int64_t gpus) {
  SelectionRequest request;
  request.gpu_count = static_cast<int>(gpus);
  request.min_memory_free_mb = 20000;
  request.max_utilization_percent = 80;
  return request;
}

// Selection only, one flat node (no topology): filter + rank 10,000 GPUs.
void BM_Select10kGpusOneNode(benchmark::State& state) {
  const gpu::GpuSnapshot fleet = Fleet(kFleetGpus, 0);
  const SelectionRequest request = Request(state.range(0));
  for (auto _ : state) {
    Result<Selection> selection = SelectGpus(fleet, request);
    benchmark::DoNotOptimize(selection);
  }
}
BENCHMARK(BM_Select10kGpusOneNode)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

// Selection only, 1,250 nodes of 8: adds the per-node placement.
void BM_Select10kGpusAcrossNodes(benchmark::State& state) {
  const gpu::GpuSnapshot fleet = Fleet(kFleetGpus, kGpusPerNode);
  const SelectionRequest request = Request(state.range(0));
  for (auto _ : state) {
    Result<Selection> selection = SelectGpus(fleet, request);
    benchmark::DoNotOptimize(selection);
  }
}
BENCHMARK(BM_Select10kGpusAcrossNodes)->Arg(1)->Arg(4)->Arg(8)->Unit(benchmark::kMicrosecond);

// Select + lease through the ledger with half the fleet already leased, then release, so
// every iteration sees the same state. This is the allocation time the daemon pays.
void BM_SelectAndLease10kGpus(benchmark::State& state) {
  const gpu::GpuSnapshot fleet = Fleet(kFleetGpus, kGpusPerNode);
  LeaseLedger ledger;
  SelectionRequest everything;
  everything.gpu_count = kFleetGpus / 2;
  if (!ledger.Allocate(fleet, everything, "background", Seconds{0})) {
    state.SkipWithError("could not pre-lease half the fleet");
    return;
  }
  const SelectionRequest request = Request(state.range(0));
  for (auto _ : state) {
    Result<Selection> selection = ledger.Allocate(fleet, request, "bench", Seconds{1});
    if (!selection) {
      state.SkipWithError(selection.error().message.c_str());
      return;
    }
    ledger.ReleaseOwner("bench");
  }
}
BENCHMARK(BM_SelectAndLease10kGpus)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

// Topology-aware placement on one 64-GPU node with a known topology (NVLink pairs).
void BM_SelectWithTopology64Gpus(benchmark::State& state) {
  gpu::GpuSnapshot node = Fleet(64, 0);
  node.topology.levels.assign(64, std::vector<gpu::LinkLevel>(64, gpu::LinkLevel::kSystem));
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) {
      if (i / 2 == j / 2) node.topology.levels[i][j] = gpu::LinkLevel::kNvLink;
    }
  }
  SelectionRequest request;
  request.gpu_count = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Result<Selection> selection = SelectGpus(node, request);
    benchmark::DoNotOptimize(selection);
  }
}
BENCHMARK(BM_SelectWithTopology64Gpus)->Arg(2)->Arg(8)->Unit(benchmark::kMicrosecond);

// Requirement estimation of a typical grid task.
void BM_EstimateRequirement(benchmark::State& state) {
  TaskSpec task;
  task.model = "meta-llama/Llama-3.1-70B-Instruct";
  task.parameters["tp-size"] = ParamValue::List({int64_t{2}, int64_t{4}, int64_t{8}});
  task.parameters["gpu-memory-utilization"] = ParamValue::Scalar(0.9);
  for (auto _ : state) {
    Result<Requirement> requirement = EstimateRequirement(task);
    benchmark::DoNotOptimize(requirement);
  }
}
BENCHMARK(BM_EstimateRequirement);

}  // namespace
}  // namespace gpuscale::alloc

BENCHMARK_MAIN();
