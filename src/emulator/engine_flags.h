// EngineFlags: the vLLM/SGLang engine flags an autotuner sweeps (the LLM Autotuner's parameter
// grids), as `gpuscale emulate` accepts them, and how each changes the emulated engine's timing
// and capacity (batch_engine.h holds the timing model itself):
//   --max-num-seqs                 = EngineConfig::max_batch_size (an alias of --max-batch-size)
//   --tensor-parallel-size / -tp   step time * (1/tp + 0.1 * (tp-1)/tp); KV cache * tp
//   --pipeline-parallel-size / -pp step time * (1/pp + 0.25 * (pp-1)/pp); KV cache * pp
//                                  (more GPUs hold the same weights, so each has more room
//                                  for KV blocks)
//   --gpu-memory-utilization       KV cache * utilization / 0.9 (0.9 is vLLM's default)
//   --max-model-len                requests with prompt + max_tokens above it are rejected;
//                                  GET /v1/models lists it (without it: the emulated model's
//                                  context, emulator_server.h)
//   --enable-chunked-prefill, --max-num-batched-tokens
//                                  token budget per step; prompts split over steps (chunked
//                                  prefill gets a 2048-token budget when none is given)
//   --dtype                        float32 doubles both step parts; auto/half/float16/
//                                  bfloat16 leave them as configured
//   --quantization                 fp8: decode 0.7x, prefill 0.8x (half the weight bytes,
//                                  FP8 tensor cores); awq/gptq (and their _marlin kernels):
//                                  decode 0.6x (4-bit weights), prefill 1.1x (dequantize)
// The factors are rough published ratios for memory-bound decode; they exist so that sweeps
// rank configurations plausibly, not to predict a real GPU.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "emulator/batch_engine.h"

namespace gpuscale::emulator {

// vLLM's default --gpu-memory-utilization: EngineConfig::kv_cache_tokens is the capacity at it.
inline constexpr double kDefaultGpuMemoryUtilization = 0.9;
// vLLM's token budget when chunked prefill is on and --max-num-batched-tokens is not given.
inline constexpr int64_t kDefaultChunkedPrefillTokens = 2048;

struct EngineFlags {
  int32_t tensor_parallel_size = 1;
  int32_t pipeline_parallel_size = 1;
  int32_t max_model_len = 0;  // 0 = the emulated model's context (kDefaultMaxModelLen)
  double gpu_memory_utilization = kDefaultGpuMemoryUtilization;  // (0, 1]
  bool enable_chunked_prefill = false;
  int64_t max_num_batched_tokens = 0;  // 0 = unlimited (or the chunked default)
  std::string dtype = "auto";
  std::string quantization;  // "" or "none" = unquantized
  // --timing: calibrated (the default; calibrated_timing.h: the simulator's model of
  // `model_preset` on `gpu` at tensor_parallel_size, so an emulated replica takes the time a
  // simulated one does) or linear (EngineConfig's fast knobs, for tests and demos).
  StepTiming timing = StepTiming::kCalibrated;
  std::string gpu = "h100";                 // --gpu, calibrated timing only
  std::string model_preset = "llama-3-8b";  // --model-preset, calibrated timing only
  // The flags given on the command line (their first long name, e.g. "--decode-ms-base"),
  // so that a flag the chosen timing does not use is an error rather than ignored.
  std::vector<std::string> given;
};

// The engine configuration `base` becomes under `flags`; with calibrated timing that of
// ApplyCalibratedTiming (calibrated_timing.h, with its errors). Errors: kInvalidArgument
// naming the flag (e.g. "--gpu-memory-utilization", "--quantization" with the values it
// knows) for a value out of range or unknown, for --gpu or --model-preset given with linear
// timing, or when the result fails ValidateEngineConfig.
Result<EngineConfig> ApplyEngineFlags(const EngineConfig& base, const EngineFlags& flags);

// Arguments the command-line parser did not know (in order): takes vLLM's short spellings
// "-tp N", "-pp N" (also "-tp=N") into `flags`; any other "--flag [value]" is an error naming
// it (kInvalidArgument, like vLLM's argparse) unless `accept_unknown`, in which case it is
// skipped together with its value (the next argument when it does not start with '-') and
// returned, e.g. {"--swap-space 4", "--enforce-eager"}, for a warning.
Result<std::vector<std::string>> ApplyExtraArgs(const std::vector<std::string>& extras,
                                                bool accept_unknown, EngineFlags& flags);

// KV-cache bytes per token the footprint counts: an 8B Llama's in 16-bit (2 x 32 layers x 8
// KV heads x 128 dims x 2 bytes). Rough for other models; it only sizes a simulated GPU's
// memory reading.
inline constexpr int64_t kKvBytesPerToken = 131072;
// Parameters of a model whose name announces no size: the emulator's default model's.
inline constexpr double kDefaultEmulatedParams = 8e9;

// Bytes each of the replica's tp x pp GPUs holds: its share of the weights (the parameters
// `model_name` announces, alloc::ParamCountFromModelName, at the bytes per weight of
// --quantization, else --dtype) and of the KV cache (engine.kv_cache_tokens x
// kKvBytesPerToken). REQUIRES: `engine` is the result of ApplyEngineFlags(..., flags).
int64_t GpuMemoryBytes(std::string_view model_name, const EngineFlags& flags,
                       const EngineConfig& engine);

}  // namespace gpuscale::emulator
