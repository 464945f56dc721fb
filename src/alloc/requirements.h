// Requirement estimation: how many GPUs a task needs and how much free memory each must
// have, derived from the task's model and engine parameters (no I/O, no GPU reading).
//
// GPU count (vLLM's world size; the LLM Autotuner's GPU tracking uses the same product):
//   world_size = tp x pp x max(dp, cp, dcp)
// Each factor accepts four spellings, e.g. `tensor-parallel-size`, `tp-size`, `tp_size`, `tp`
// (giving two spellings of one factor is an error). A list is a grid of experiments, and the
// task needs enough GPUs for its largest point: world_size = max(tp) x max(pp) x
// max(max(dp), max(cp), max(dcp)), and gpus = world_size.
//
// Memory per GPU, when the engine reserves a share of the GPU
// (`gpu-memory-utilization`/`gpu_memory_utilization` of vLLM, `mem-fraction-static`/
// `mem_fraction_static` of SGLang; largest value of a list):
//   memory_mb_per_gpu = ceil(fraction x gpu_total_mb)
// with gpu_total_mb from the task's `gpu_memory_mb`, else EstimateOptions (the CLI passes the
// backend's reading), else kDefaultGpuMemoryMb (H100 80GB). Otherwise, from the weights:
//   weights_mb        = params x bytes_per_param / (tp x pp) / 2^20
//   memory_mb_per_gpu = ceil(weights_mb x (1 + kRuntimeOverheadShare) + kCudaContextMb)
// params from `params_b`, else the model name (model_size.h); bytes_per_param from `dtype`,
// else the `quantization` or `dtype` engine parameter, else bf16 (2 bytes). tp x pp is the
// smallest in the grid, because the point that shards the weights least needs the most
// memory per GPU. A model whose size is unknown gets kUnknownModelMemoryMb (the Autotuner's
// floor) and the explanation says to set params_b. The KV cache is not counted: it takes
// whatever is left, and an engine that must reserve it should set a memory fraction.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloc/task_spec.h"
#include "core/result.h"

namespace gpuscale::alloc {

// Total memory of an H100 80GB as nvidia-smi reports it, MiB.
inline constexpr int64_t kDefaultGpuMemoryMb = 81559;
// Activations, CUDA graphs and NCCL buffers, as a share of the weights on one GPU.
inline constexpr double kRuntimeOverheadShare = 0.20;
// CUDA context, cuBLAS/cuDNN workspaces: a fixed cost per GPU, MiB.
inline constexpr int64_t kCudaContextMb = 1024;
// Requirement for a model of unknown size, MiB.
inline constexpr int64_t kUnknownModelMemoryMb = 8000;
// Largest accepted world size; guards the arithmetic against absurd inputs.
inline constexpr int64_t kMaxWorldSize = 1 << 20;

struct EstimateOptions {
  // Total memory of the GPUs the task will run on, MiB, when a backend has read it.
  std::optional<int64_t> gpu_memory_total_mb;
};

struct Requirement {
  int world_size = 1;             // largest world size of the grid
  int gpus = 1;                   // GPUs to allocate (== world_size)
  int64_t memory_mb_per_gpu = 0;  // free memory each GPU must have, MiB
  std::string explanation;        // the formula with this task's numbers, one step per line
                                  // (ends with the warnings, "warning: ..." lines)
  // Parameters that look like parallel sizes the estimate does not count, by name.
  std::vector<std::string> warnings;
};

// Estimates the requirement of `task`. Errors (kInvalidArgument, field "parameters.<name>",
// "params_b", "dtype" or "gpu_memory_mb", with the source line when known): a parallel size
// that is not a positive integer or list of them, two spellings of one factor, a memory
// fraction outside (0, 1], an unknown dtype, a world size above kMaxWorldSize.
Result<Requirement> EstimateRequirement(const TaskSpec& task, const EstimateOptions& options = {});

// The same checks without the estimate; task parsers call it to fail early.
Status ValidateTask(const TaskSpec& task);

}  // namespace gpuscale::alloc
