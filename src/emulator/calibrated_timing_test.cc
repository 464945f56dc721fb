#include "emulator/calibrated_timing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/engine_flags.h"

namespace gpuscale::emulator {
namespace {

EngineFlags Calibrated() {
  EngineFlags flags;
  flags.timing = StepTiming::kCalibrated;
  return flags;
}

// The error's field, or "" when the flags were accepted.
std::string FieldOfError(const EngineFlags& flags) {
  Result<EngineConfig> config = ApplyEngineFlags(EngineConfig{}, flags);
  return config ? "" : config.error().field;
}

// Calibrated timing is the default (issue 45): flags that name no timing get the
// simulator's model, its KV cache and chunked prefill, not the linear knobs.
TEST(CalibratedTimingTest, IsTheDefault) {
  Result<EngineConfig> config = ApplyEngineFlags(EngineConfig{}, EngineFlags{});
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_NE(config->step_timer, nullptr);
  EXPECT_TRUE(config->chunked_prefill);
  EXPECT_GT(config->kv_cache_tokens, EngineConfig{}.kv_cache_tokens);
}

TEST(CalibratedTimingTest, LinearKnobsGivenWithCalibratedTimingAreErrorsNamingTheFlag) {
  ASSERT_EQ(FieldOfError(Calibrated()), "");
  for (const char* flag : kLinearOnlyFlags) {
    EngineFlags flags = Calibrated();
    flags.given = {"--port", flag};
    EXPECT_EQ(FieldOfError(flags), flag);
    flags.timing = StepTiming::kLinear;  // where they belong
    EXPECT_EQ(FieldOfError(flags), "") << flag;
  }
}

TEST(CalibratedTimingTest, CalibratedOnlyFlagsGivenWithLinearTimingAreErrors) {
  for (const char* flag : {"--gpu", "--model-preset"}) {
    EngineFlags flags;
    flags.timing = StepTiming::kLinear;
    flags.given = {flag};
    EXPECT_EQ(FieldOfError(flags), flag);
    flags.timing = StepTiming::kCalibrated;
    EXPECT_EQ(FieldOfError(flags), "") << flag;
  }
}

TEST(CalibratedTimingTest, WhatTheModelCannotTimeNamesTheFlag) {
  const std::vector<std::pair<void (*)(EngineFlags&), std::string>> cases = {
      {[](EngineFlags& f) { f.model_preset = "llama-9"; }, "--model-preset"},
      {[](EngineFlags& f) { f.gpu = "b200"; }, "--gpu"},
      {[](EngineFlags& f) { f.gpu = "a100"; }, "--gpu"},  // no a100 profile for llama-3-8b
      {[](EngineFlags& f) { f.tensor_parallel_size = 3; }, "--tensor-parallel-size"},
      {[](EngineFlags& f) { f.pipeline_parallel_size = 2; }, "--pipeline-parallel-size"},
      {[](EngineFlags& f) { f.quantization = "fp8"; }, "--quantization"},
      {[](EngineFlags& f) { f.dtype = "float32"; }, "--dtype"},
      {[](EngineFlags& f) { f.max_num_batched_tokens = int64_t{1} << 40; },
       "--max-num-batched-tokens"},
  };
  for (const auto& [mutate, flag] : cases) {
    EngineFlags flags = Calibrated();
    mutate(flags);
    EXPECT_EQ(FieldOfError(flags), flag);
  }
  EXPECT_EQ(ParseStepTiming("fast").error().field, "--timing");
  EXPECT_EQ(*ParseStepTiming("calibrated"), StepTiming::kCalibrated);
}

TEST(CalibratedTimingTest, GivenBatchLimitBudgetAndMemoryOverrideTheModels) {
  EngineFlags flags = Calibrated();
  Result<EngineConfig> plain = ApplyEngineFlags(EngineConfig{}, flags);
  ASSERT_TRUE(plain.has_value());
  EngineConfig base;
  base.max_batch_size = 16;
  flags.given = {"--max-batch-size"};
  flags.max_num_batched_tokens = 1024;
  flags.gpu_memory_utilization = 0.45;
  Result<EngineConfig> config = ApplyEngineFlags(base, flags);
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->max_batch_size, 16);
  EXPECT_EQ(config->max_num_batched_tokens, 1024);
  EXPECT_NEAR(static_cast<double>(config->kv_cache_tokens),
              static_cast<double>(plain->kv_cache_tokens) / 2, 1);
  // Not given: the model's 256, whatever the linear default in `base`.
  flags.given.clear();
  EXPECT_EQ(ApplyEngineFlags(base, flags)->max_batch_size, 256);
}

}  // namespace
}  // namespace gpuscale::emulator
