// GPU selection: pick N GPUs of one snapshot for a request, or explain why it cannot be met.
//
//   1. Filter: a GPU is eligible when it is of the requested type (gpu_type, when set), its
//      free memory >= min_memory_free_mb, its utilization <= max_utilization_percent, and it
//      is not in `taken` (leased). A missing
//      reading fails a filter that needs it (we never hand out a GPU we cannot vouch for):
//      free memory falls back to total - used, and unknown utilization passes only when
//      max_utilization_percent >= 100.
//   2. Rank: availability score (gpu/availability_score.h) descending, ties by lower index
//      (then node name), so the result is deterministic.
//   3. Place: with one GPU, or when every eligible GPU sits on one node and the backend does
//      not know the topology, the first N by rank. Otherwise the N GPUs are chosen close
//      together: the candidates are groups of N on one node, built greedily from every
//      eligible seed (each step adds the GPU whose worst link to the group is shortest,
//      then the best ranked); the group with the shortest worst link wins, then the highest
//      total score, then the best-ranked seed. Link lengths are the snapshot's topology
//      (NVML levels: NVLink < PCIe switch < host bridge < NUMA < system), or all equal on a
//      node whose topology is unknown. When no single node has N eligible GPUs, whole nodes
//      are filled in order of most eligible GPUs (then best score), so a request spans as few
//      nodes as possible.
//
// The result lists the chosen GPUs best-ranked first. Cost for G GPUs, E eligible: O(G) to
// filter; then O(E log N) without placement, or O(E log k) to group nodes of k GPUs plus,
// with a known topology, O(k^2 * N) per node (bench/alloc_bench.cc: ~0.1-0.5 ms of CPU for
// 10,000 GPUs).
//
// Thread-safety: pure functions over values. For select-and-lease as one atomic step use
// LeaseLedger::Allocate.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "gpu/availability_score.h"
#include "gpu/gpu_info.h"

namespace gpuscale::alloc {

struct SelectionRequest {
  int gpu_count = 1;                     // N, >= 1
  int64_t min_memory_free_mb = 0;        // per GPU, MiB; 0 = no memory filter
  double max_utilization_percent = 100;  // 0..100; 100 = no utilization filter
  gpu::ScoreWeights weights;             // ranking weights (default 0.6 memory / 0.4 idle)
  // Type key (gpu/gpu_type.h, e.g. "A100-80GB"): only GPUs of exactly this type are
  // eligible. Empty (default) = any type.
  std::string gpu_type;
};

struct SelectedGpu {
  size_t position = 0;  // position in snapshot.gpus (what GpuTopology indexes)
  int index = 0;        // device index on its node
  std::string uuid;
  std::string node;
  std::string name;
  std::string type;                      // type key; empty = unknown
  std::optional<double> price_per_hour;  // nullopt = unknown
  bool spot = false;
  int64_t memory_free_mb = 0;  // as used by the filter (free, or total - used)
  std::optional<double> utilization_percent;
  double score = 0;
};

struct Selection {
  std::vector<SelectedGpu> gpus;  // best-ranked first
  std::vector<int> Indices() const;
};

// Why a GPU was not eligible; `reason` reads after "GPU <index>: ".
struct Exclusion {
  size_t position = 0;
  int index = 0;
  std::string node;
  std::string reason;  // e.g. "2048 MiB free < 8000 MiB required"
};

// Key under which a GPU is leased: its uuid, else "<node>#<index>" ("local" for this host).
std::string LeaseKeyOf(const gpu::GpuInfo& gpu);

// GPUs already handed out. `owner_of(key)` returns the holder of the GPU with that lease key
// ("leased to job-7" in exclusions), or nullptr when it is free; unset means none is taken.
// A lookup rather than a copy, so the ledger can select under its lock without copying.
struct TakenGpus {
  std::function<const std::string*(const std::string& key)> owner_of;
};

// How many GPUs of each type `snapshot` has that are not in `taken`, ordered by type:
// "A100-80GB 2, H100-80GB 3" ("unknown" for GPUs without a type); "" when there are none.
std::string CountsByType(const gpu::GpuSnapshot& snapshot, const TakenGpus& taken = {});

// The same counts as a map by type key ("" for GPUs without a type): what a mixed fleet's
// sizing reads as the free GPUs of each type (scale::AllocationLimits::free_gpus).
std::map<std::string, int> FreeGpusByType(const gpu::GpuSnapshot& snapshot,
                                          const TakenGpus& taken = {});

// Every GPU of `snapshot` that fails a filter, with its reason (in snapshot order).
std::vector<Exclusion> ExplainExclusions(const gpu::GpuSnapshot& snapshot,
                                         const SelectionRequest& request,
                                         const TakenGpus& taken = {});

// Selects request.gpu_count GPUs. Errors: kInvalidArgument for a bad request (gpu_count < 1,
// negative memory, utilization outside 0..100; field names the request member);
// kResourceExhausted when fewer GPUs are eligible, with a message such as
// "need 4 GPUs, 2 of 5 eligible (min 8000 MiB free, max 50% utilization); excluded:
//  GPU 1: 2048 MiB free < 8000 MiB required; GPU 3: leased to job-7; ...". With a gpu_type
// it names the type and what is free by type: "need 2 GPUs of type A100-80GB, 0 of 8
// eligible; free by type: H100-80GB 3; excluded: GPU 0: type H100-80GB, not A100-80GB; ...".
Result<Selection> SelectGpus(const gpu::GpuSnapshot& snapshot, const SelectionRequest& request,
                             const TakenGpus& taken = {});

// Checks a request alone (the CLI validates flags before reading GPUs).
Status ValidateRequest(const SelectionRequest& request);

}  // namespace gpuscale::alloc
