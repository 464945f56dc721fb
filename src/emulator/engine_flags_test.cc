#include "emulator/engine_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/clock.h"
#include "emulator/batch_engine.h"

namespace gpuscale::emulator {
namespace {

EngineConfig RoundConfig() {
  EngineConfig config;
  config.prefill_ms_per_1k_tokens = 100;
  config.decode_ms_base = 10;
  config.decode_ms_per_seq = 1;
  config.max_batch_size = 8;
  config.kv_cache_tokens = 100000;
  return config;
}

// Submits `requests` identical requests at t = 0 and steps until all finished; returns
// output tokens per second.
double SaturatedTokensPerSecond(const EngineConfig& config, int requests) {
  BatchEngine engine(config);
  for (int i = 0; i < requests; ++i) EXPECT_TRUE(engine.Submit(100, 50, Seconds{0}).has_value());
  Seconds now{0};
  while (std::optional<Seconds> end = engine.NextStepEnd()) {
    now = *end;
    engine.Advance(now);
  }
  EXPECT_EQ(engine.stats().requests_finished_total, requests);
  return static_cast<double>(engine.stats().generation_tokens_total) / now.count();
}

TEST(EngineFlagsTest, HigherTensorParallelismShortensSteps) {
  struct Case {
    int32_t tp;
    double expected_factor;  // 1/tp + 0.1 (tp-1)/tp
  };
  const std::vector<Case> cases = {{1, 1.0}, {2, 0.55}, {4, 0.325}, {8, 0.2125}};
  const double base_ms = StepMilliseconds(RoundConfig(), 4, 500);  // 10 + 4 + 50
  EXPECT_DOUBLE_EQ(base_ms, 64);
  double previous = base_ms * 2;
  for (const Case& c : cases) {
    EngineFlags flags;
    flags.timing = StepTiming::kLinear;
    flags.tensor_parallel_size = c.tp;
    Result<EngineConfig> config = ApplyEngineFlags(RoundConfig(), flags);
    ASSERT_TRUE(config.has_value()) << config.error().ToString();
    const double step_ms = StepMilliseconds(*config, 4, 500);
    EXPECT_NEAR(step_ms, base_ms * c.expected_factor, 1e-9) << "tp " << c.tp;
    EXPECT_LT(step_ms, previous) << "tp " << c.tp;
    previous = step_ms;
    EXPECT_EQ(config->kv_cache_tokens, 100000 * c.tp) << "more GPUs hold more KV blocks";
  }
}

TEST(EngineFlagsTest, PipelineParallelismShortensStepsLessThanTensorParallelism) {
  EngineFlags tp2, pp2;
  tp2.timing = pp2.timing = StepTiming::kLinear;
  tp2.tensor_parallel_size = 2;
  pp2.pipeline_parallel_size = 2;
  const double tp_ms = StepMilliseconds(*ApplyEngineFlags(RoundConfig(), tp2), 1, 0);
  const double pp_ms = StepMilliseconds(*ApplyEngineFlags(RoundConfig(), pp2), 1, 0);
  EXPECT_DOUBLE_EQ(pp_ms, 11 * (0.5 + 0.25 * 0.5));
  EXPECT_LT(tp_ms, pp_ms);
  EXPECT_LT(pp_ms, 11);
}

TEST(EngineFlagsTest, LargerMaxNumSeqsRaisesSaturatedThroughput) {
  double previous = 0;
  for (int32_t seqs : {1, 4, 16, 64}) {
    EngineConfig config = RoundConfig();
    config.max_batch_size = seqs;
    const double tokens_per_second = SaturatedTokensPerSecond(config, 64);
    EXPECT_GT(tokens_per_second, previous * 1.2) << "max-num-seqs " << seqs;
    previous = tokens_per_second;
  }
}

TEST(EngineFlagsTest, QuantizationAndDtypeScaleTheStepParts) {
  struct Case {
    std::string dtype, quantization;
    double decode_factor, prefill_factor;
  };
  const std::vector<Case> cases = {{"auto", "", 1, 1},        {"bfloat16", "none", 1, 1},
                                   {"float32", "", 2, 2},     {"auto", "fp8", 0.7, 0.8},
                                   {"half", "awq", 0.6, 1.1}, {"auto", "gptq_marlin", 0.6, 1.1}};
  for (const Case& c : cases) {
    EngineFlags flags;
    flags.timing = StepTiming::kLinear;
    flags.dtype = c.dtype;
    flags.quantization = c.quantization;
    Result<EngineConfig> config = ApplyEngineFlags(RoundConfig(), flags);
    ASSERT_TRUE(config.has_value()) << config.error().ToString();
    EXPECT_NEAR(StepMilliseconds(*config, 4, 0), 14 * c.decode_factor, 1e-9) << c.quantization;
    EXPECT_NEAR(StepMilliseconds(*config, 0, 1000), 10 * c.decode_factor + 100 * c.prefill_factor,
                1e-9)
        << c.quantization;
  }
}

TEST(EngineFlagsTest, GpuMemoryUtilizationScalesTheKvCache) {
  EngineFlags flags;
  flags.timing = StepTiming::kLinear;
  flags.gpu_memory_utilization = 0.45;
  EXPECT_EQ(ApplyEngineFlags(RoundConfig(), flags)->kv_cache_tokens, 50000);
  flags.gpu_memory_utilization = 0.9;
  EXPECT_EQ(ApplyEngineFlags(RoundConfig(), flags)->kv_cache_tokens, 100000);
}

TEST(EngineFlagsTest, BadValuesNameTheFlag) {
  const std::vector<std::pair<void (*)(EngineFlags&), std::string>> cases = {
      {[](EngineFlags& f) { f.tensor_parallel_size = 0; }, "--tensor-parallel-size"},
      {[](EngineFlags& f) { f.pipeline_parallel_size = -1; }, "--pipeline-parallel-size"},
      {[](EngineFlags& f) { f.gpu_memory_utilization = 1.5; }, "--gpu-memory-utilization"},
      {[](EngineFlags& f) { f.gpu_memory_utilization = 0; }, "--gpu-memory-utilization"},
      {[](EngineFlags& f) { f.max_model_len = -5; }, "--max-model-len"},
      {[](EngineFlags& f) { f.max_num_batched_tokens = -1; }, "--max-num-batched-tokens"},
      {[](EngineFlags& f) { f.dtype = "int3"; }, "--dtype"},
      {[](EngineFlags& f) { f.quantization = "magic"; }, "--quantization"},
  };
  for (const auto& [mutate, field] : cases) {
    EngineFlags flags;
    flags.timing = StepTiming::kLinear;
    mutate(flags);
    Result<EngineConfig> config = ApplyEngineFlags(RoundConfig(), flags);
    ASSERT_FALSE(config.has_value()) << field;
    EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument) << field;
    EXPECT_EQ(config.error().field, field);
  }
  EngineFlags flags;
  flags.timing = StepTiming::kLinear;
  flags.quantization = "magic";
  EXPECT_NE(ApplyEngineFlags(RoundConfig(), flags).error().message.find("fp8"), std::string::npos)
      << "the error lists the known values";
}

TEST(EngineFlagsTest, ExtraArgsTakeShortParallelFlags) {
  EngineFlags flags;
  flags.timing = StepTiming::kLinear;
  Result<std::vector<std::string>> ignored = ApplyExtraArgs({"-tp", "4", "-pp=2"}, false, flags);
  ASSERT_TRUE(ignored.has_value()) << ignored.error().ToString();
  EXPECT_TRUE(ignored->empty());
  EXPECT_EQ(flags.tensor_parallel_size, 4);
  EXPECT_EQ(flags.pipeline_parallel_size, 2);
  Result<std::vector<std::string>> bad = ApplyExtraArgs({"-tp", "two"}, false, flags);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().field, "-tp");
  EXPECT_EQ(ApplyExtraArgs({"-tp"}, false, flags).error().field, "-tp");
}

TEST(EngineFlagsTest, UnknownFlagsFailUnlessAccepted) {
  EngineFlags flags;
  flags.timing = StepTiming::kLinear;
  Result<std::vector<std::string>> strict = ApplyExtraArgs({"--swap-space", "4"}, false, flags);
  ASSERT_FALSE(strict.has_value());
  EXPECT_EQ(strict.error().field, "--swap-space");
  EXPECT_NE(strict.error().message.find("--accept-unknown-flags"), std::string::npos);

  Result<std::vector<std::string>> lenient = ApplyExtraArgs(
      {"--swap-space", "4", "--enforce-eager", "--seed=3", "-tp", "2"}, true, flags);
  ASSERT_TRUE(lenient.has_value()) << lenient.error().ToString();
  EXPECT_EQ(*lenient, (std::vector<std::string>{"--swap-space 4", "--enforce-eager", "--seed=3"}));
  EXPECT_EQ(flags.tensor_parallel_size, 2);
  EXPECT_FALSE(ApplyExtraArgs({"stray"}, true, flags).has_value()) << "a positional is no flag";
}

TEST(EngineFlagsTest, ChunkedPrefillSplitsALongPromptOverSteps) {
  EngineConfig config = RoundConfig();
  config.chunked_prefill = true;
  config.max_num_batched_tokens = 1000;
  BatchEngine engine(config);
  const RequestId id = *engine.Submit(2500, 2, Seconds{0});
  // Chunks of 1000, 1000, 500: steps of 10+1+100, 10+1+100, 10+1+50 ms; the first token comes
  // with the last chunk.
  Seconds now{0};
  std::vector<int32_t> prefilled;
  while (engine.Find(id)->tokens_generated == 0) {
    now = *engine.NextStepEnd();
    engine.Advance(now);
    prefilled.push_back(engine.Find(id)->prefilled_tokens);
  }
  EXPECT_EQ(prefilled, (std::vector<int32_t>{1000, 2000, 2500}));
  EXPECT_NEAR(now.count(), 0.111 + 0.111 + 0.061, 1e-9);
}

TEST(EngineFlagsTest, TokenBudgetWithoutChunkingDefersPromptsThatDoNotFit) {
  EngineConfig config = RoundConfig();
  config.max_num_batched_tokens = 1000;
  BatchEngine engine(config);
  const RequestId a = *engine.Submit(600, 5, Seconds{0});  // starts a step alone at t = 0
  const RequestId b = *engine.Submit(600, 5, Seconds{0});
  const RequestId c = *engine.Submit(400, 5, Seconds{0});
  engine.Advance(*engine.NextStepEnd());  // a's prefill step ends; the next step begins:
  EXPECT_EQ(engine.Find(a)->tokens_generated, 1);
  // a decodes (1 token of the budget), b fits (600 <= 999), c does not (400 > 399).
  EXPECT_EQ(engine.Find(b)->state, RequestState::kRunning);
  EXPECT_EQ(engine.Find(c)->state, RequestState::kWaiting);
  engine.Advance(*engine.NextStepEnd());
  EXPECT_EQ(engine.Find(b)->tokens_generated, 1);
  EXPECT_EQ(engine.Find(c)->state, RequestState::kRunning);
  engine.Advance(*engine.NextStepEnd());
  EXPECT_EQ(engine.Find(c)->tokens_generated, 1);
}

TEST(EngineFlagsTest, MaxModelLenRejectsLongRequestsLikeVllm) {
  EngineConfig config = RoundConfig();
  config.max_model_len = 1024;
  BatchEngine engine(config);
  EXPECT_TRUE(engine.Submit(1000, 24, Seconds{0}).has_value());
  Result<RequestId> rejected = engine.Submit(1000, 25, Seconds{0});
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().field, "max_tokens");
  EXPECT_NE(rejected.error().message.find("maximum context length is 1024"), std::string::npos);
}

}  // namespace
}  // namespace gpuscale::emulator

namespace gpuscale::emulator {
namespace {

struct FootprintCase {
  std::string name;
  std::string model;
  EngineFlags flags;
  double gib;  // per GPU
};

// Weights (the name's parameters x bytes per weight) + KV cache (tokens x 128 KiB), split
// over tp x pp GPUs.
TEST(EngineFlagsTest, GpuMemoryIsTheWeightsAndKvCacheShare) {
  const double kv_gib = 65536.0 * kKvBytesPerToken / (1 << 30);  // 8 GiB at the defaults
  EngineFlags tp2;
  tp2.tensor_parallel_size = 2;
  EngineFlags fp8;
  fp8.quantization = "fp8";
  EngineFlags fp32;
  fp32.dtype = "float32";
  const std::vector<FootprintCase> cases = {
      {"size from the name", "meta-llama/Llama-3.1-70B-Instruct", {}, 140e9 / (1 << 30) + kv_gib},
      {"no size: an 8B", "demo", {}, 16e9 / (1 << 30) + kv_gib},
      {"fp8 halves the weights", "Qwen2.5-7B", fp8, 7e9 / (1 << 30) + kv_gib},
      {"float32 doubles them", "Qwen2.5-7B", fp32, 28e9 / (1 << 30) + kv_gib},
      // tp 2 doubles the KV cache (more room per GPU) and halves what each GPU holds.
      {"tp 2", "Llama-3.1-70B", tp2, (140e9 / (1 << 30) + 2 * kv_gib) / 2},
  };
  for (const FootprintCase& c : cases) {
    EngineConfig base;
    base.kv_cache_tokens = 65536;
    EngineFlags flags = c.flags;
    flags.timing = StepTiming::kLinear;  // the KV cache of `base`, not the model's
    Result<EngineConfig> engine = ApplyEngineFlags(base, flags);
    ASSERT_TRUE(engine.has_value()) << c.name << ": " << engine.error().ToString();
    EXPECT_NEAR(static_cast<double>(GpuMemoryBytes(c.model, flags, *engine)) / (1 << 30), c.gib,
                0.01)
        << c.name;
  }
}

}  // namespace
}  // namespace gpuscale::emulator
