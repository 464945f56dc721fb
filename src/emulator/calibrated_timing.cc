#include "emulator/calibrated_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>

#include "sim/replica_model.h"

namespace gpuscale::emulator {
namespace {

class CalibratedStepTimer final : public StepTimer {
 public:
  CalibratedStepTimer(std::unique_ptr<sim::ReplicaModel> model, std::string description)
      : model_(std::move(model)), description_(std::move(description)) {}

  double StepSeconds(const StepShape& step) const override {
    const sim::PrefillWork prefill{.tokens = step.prefill_tokens,
                                   .attention_tokens2 = step.prefill_attention_tokens2};
    return model_->MixedStepSeconds(prefill, step.decoding, step.context_tokens);
  }
  std::string Describe() const override { return description_; }

 private:
  std::unique_ptr<const sim::ReplicaModel> model_;
  std::string description_;
};

// sim::ReplicaModelConfig's field names as the `gpuscale emulate` flags that set them.
std::string FlagOf(std::string_view field) {
  if (field == "model") return "--model-preset";
  if (field == "gpu") return "--gpu";
  if (field == "tensor_parallel") return "--tensor-parallel-size";
  if (field == "max_batch_size") return "--max-batch-size";
  if (field == "max_batched_tokens") return "--max-num-batched-tokens";
  if (field == "kv_cache_tokens") return "--gpu-memory-utilization";
  return std::string(field);
}

Result<std::unique_ptr<sim::ReplicaModel>> MakeModel(const sim::ReplicaModelConfig& config) {
  Result<std::unique_ptr<sim::ReplicaModel>> model = sim::MakeReplicaModel(config);
  if (!model) {
    Error error = model.error();
    error.field = FlagOf(error.field);
    return Unexpected<Error>(std::move(error));
  }
  return model;
}

bool Given(const EngineFlags& flags, std::string_view flag) {
  return std::ranges::find(flags.given, flag) != flags.given.end();
}

// The model's configuration under `flags` (the KV cache is derived: kv_cache_tokens 0).
Result<sim::ReplicaModelConfig> ModelConfig(const EngineConfig& base, const EngineFlags& flags) {
  for (const char* flag : kLinearOnlyFlags) {
    if (Given(flags, flag)) {
      return InvalidArgument(
          "a linear-timing knob (add --timing linear); calibrated timing, the default, takes it "
          "from the model",
          flag);
    }
  }
  if (flags.pipeline_parallel_size != 1) {
    return InvalidArgument(
        fmt::format("calibrated timing models tensor parallelism only, got {} stages",
                    flags.pipeline_parallel_size),
        "--pipeline-parallel-size");
  }
  if (flags.max_num_batched_tokens > std::numeric_limits<int>::max()) {
    return InvalidArgument(
        fmt::format("expected at most {} tokens, got {}", std::numeric_limits<int>::max(),
                    flags.max_num_batched_tokens),
        "--max-num-batched-tokens");
  }
  sim::ReplicaModelConfig config;
  config.model = flags.model_preset;
  config.gpu = flags.gpu;
  config.tensor_parallel = flags.tensor_parallel_size;
  if (Given(flags, "--max-batch-size")) config.max_batch_size = base.max_batch_size;
  if (flags.max_num_batched_tokens > 0) {
    config.max_batched_tokens = static_cast<int>(flags.max_num_batched_tokens);
  }
  return config;
}

}  // namespace

Result<EngineConfig> ApplyCalibratedTiming(const EngineConfig& base, const EngineFlags& flags) {
  GS_ASSIGN_OR_RETURN(sim::ReplicaModelConfig model_config, ModelConfig(base, flags));
  GS_ASSIGN_OR_RETURN(std::unique_ptr<sim::ReplicaModel> model, MakeModel(model_config));
  if (flags.gpu_memory_utilization != kDefaultGpuMemoryUtilization) {
    // As with linear timing: the KV cache scales with the memory vLLM may use.
    model_config.kv_cache_tokens = std::max<int64_t>(
        1, std::llround(static_cast<double>(model->KvCacheTokens()) * flags.gpu_memory_utilization /
                        kDefaultGpuMemoryUtilization));
    GS_ASSIGN_OR_RETURN(model, MakeModel(model_config));
  }
  EngineConfig config = base;
  config.max_batch_size = model->MaxBatchSize();
  config.kv_cache_tokens = model->KvCacheTokens();
  config.max_num_batched_tokens = model->MaxBatchedTokens();
  config.chunked_prefill = true;
  config.tensor_parallel_size = flags.tensor_parallel_size;
  config.pipeline_parallel_size = 1;
  config.max_model_len = flags.max_model_len;
  config.step_timer = std::make_shared<CalibratedStepTimer>(
      std::move(model), fmt::format("calibrated {} on {}, tp {} (sim::ReplicaModel)",
                                    flags.model_preset, flags.gpu, flags.tensor_parallel_size));
  GS_RETURN_IF_ERROR(ValidateEngineConfig(config));
  return config;
}

}  // namespace gpuscale::emulator
