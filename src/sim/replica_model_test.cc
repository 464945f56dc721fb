#include "sim/replica_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/replica_model_calibrated.h"

namespace gpuscale::sim {
namespace {

std::unique_ptr<ReplicaModel> MustMake(const ReplicaModelConfig& config) {
  auto model = MakeReplicaModel(config);
  EXPECT_TRUE(model.has_value()) << model.error().ToString();
  return model.has_value() ? std::move(*model) : nullptr;
}

ReplicaModelConfig Config(std::string model, std::string gpu, int tp) {
  ReplicaModelConfig c;
  c.model = std::move(model);
  c.gpu = std::move(gpu);
  c.tensor_parallel = tp;
  return c;
}

// Every supported combination (see MakeReplicaModel).
std::vector<ReplicaModelConfig> SupportedConfigs() {
  std::vector<ReplicaModelConfig> out;
  for (int tp : {1, 2, 4, 8}) {
    out.push_back(Config("llama-3-8b", "h100", tp));
    out.push_back(Config("llama-2-7b", "h100", tp));
  }
  for (const char* gpu : {"h100", "a100"}) {
    for (int tp : {2, 4, 8}) out.push_back(Config("llama-2-70b", gpu, tp));
  }
  return out;
}

TEST(InterpolatePerfTest, FlatBelowInterpolatesInsideExtrapolatesBeyond) {
  const std::vector<PerfPoint> points = {{10, 1.0}, {20, 2.0}, {40, 6.0}};
  EXPECT_DOUBLE_EQ(InterpolatePerf(points, 1), 1.0);
  EXPECT_DOUBLE_EQ(InterpolatePerf(points, 10), 1.0);
  EXPECT_DOUBLE_EQ(InterpolatePerf(points, 15), 1.5);
  EXPECT_DOUBLE_EQ(InterpolatePerf(points, 20), 2.0);
  EXPECT_DOUBLE_EQ(InterpolatePerf(points, 30), 4.0);
  EXPECT_DOUBLE_EQ(InterpolatePerf(points, 40), 6.0);
  EXPECT_DOUBLE_EQ(InterpolatePerf(points, 50), 8.0);  // last slope 0.2 / token
}

TEST(ReplicaModelTest, EverySupportedConfigBuilds) {
  for (const ReplicaModelConfig& c : SupportedConfigs()) {
    auto model = MakeReplicaModel(c);
    EXPECT_TRUE(model.has_value()) << c.model << " " << c.gpu << " tp" << c.tensor_parallel << ": "
                                   << model.error().ToString();
  }
}

TEST(ReplicaModelTest, PrefillTimeNeverFallsAsPromptsGrow) {
  for (const ReplicaModelConfig& c : SupportedConfigs()) {
    auto model = MustMake(c);
    ASSERT_NE(model, nullptr);
    double previous = 0;
    for (int64_t n = 1; n <= 65536; n += (n < 512 ? 1 : 37)) {
      const double t = model->PrefillSeconds(n);
      ASSERT_GE(t, previous) << c.model << " " << c.gpu << " tp" << c.tensor_parallel << " n=" << n;
      previous = t;
    }
    EXPECT_GT(model->PrefillSeconds(16384), model->PrefillSeconds(1024));
  }
}

TEST(ReplicaModelTest, DecodeStepTimeNeverFallsWithBatchOrContext) {
  for (const ReplicaModelConfig& c : SupportedConfigs()) {
    auto model = MustMake(c);
    ASSERT_NE(model, nullptr);
    double previous = 0;
    for (int batch = 1; batch <= 1024; ++batch) {
      const double t = model->DecodeStepSeconds(batch, int64_t{batch} * 300);
      ASSERT_GE(t, previous) << c.model << " " << c.gpu << " tp" << c.tensor_parallel
                             << " batch=" << batch;
      previous = t;
    }
    previous = 0;
    for (int64_t context = 0; context <= 400000; context += 1000) {
      const double t = model->DecodeStepSeconds(8, context);
      ASSERT_GE(t, previous) << c.model << " context=" << context;
      previous = t;
    }
    EXPECT_GT(model->DecodeStepSeconds(8, 400000), model->DecodeStepSeconds(8, 1000));
  }
}

TEST(ReplicaModelTest, NothingToDoTakesNoTime) {
  auto model = MustMake(ReplicaModelConfig{});
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->PrefillSeconds(0), 0);
  EXPECT_EQ(model->PrefillSeconds(-5), 0);
  EXPECT_EQ(model->DecodeStepSeconds(0, 1000), 0);
}

TEST(ReplicaModelTest, DefaultKvCapacityComesFromMemoryLeftAfterWeights) {
  auto model = MustMake(ReplicaModelConfig{});  // llama-3-8b on one h100
  ASSERT_NE(model, nullptr);
  // (80 GB * 0.9 - 16.06 GB) / 128 KiB per token.
  EXPECT_EQ(model->KvCacheTokens(), static_cast<int64_t>((72e9 - 16.06e9) / 131072));
  EXPECT_EQ(model->MaxBatchSize(), 256);
  EXPECT_EQ(model->MaxBatchedTokens(), 8192);
  // Llama-2-70B at tp 4: (4 * 72 GB - 137.96 GB) / 320 KiB per token.
  auto big = MustMake(Config("llama-2-70b", "h100", 4));
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->KvCacheTokens(), static_cast<int64_t>((288e9 - 137.96e9) / 327680));
}

TEST(ReplicaModelTest, ExplicitLimitsAreKept) {
  ReplicaModelConfig c;
  c.kv_cache_tokens = 12345;
  c.max_batch_size = 64;
  c.max_batched_tokens = 2048;
  auto model = MustMake(c);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->KvCacheTokens(), 12345);
  EXPECT_EQ(model->MaxBatchSize(), 64);
  EXPECT_EQ(model->MaxBatchedTokens(), 2048);
}

TEST(ReplicaModelTest, GqaModelReadsAQuarterOfTheKvPerToken) {
  // Llama-2-7B keeps 32 KV heads, Llama-3-8B 8: the context term differs 4x.
  auto small_kv = MustMake(Config("llama-3-8b", "h100", 1));
  auto big_kv = MustMake(Config("llama-2-7b", "h100", 1));
  ASSERT_NE(small_kv, nullptr);
  ASSERT_NE(big_kv, nullptr);
  const double kv8b = small_kv->DecodeStepSeconds(1, 100000) - small_kv->DecodeStepSeconds(1, 0);
  const double kv7b = big_kv->DecodeStepSeconds(1, 100000) - big_kv->DecodeStepSeconds(1, 0);
  EXPECT_NEAR(kv7b / kv8b, 4.0, 1e-9);
}

TEST(ReplicaModelTest, TensorParallelismSpeedsUpLargePrefills) {
  auto tp1 = MustMake(Config("llama-3-8b", "h100", 1));
  auto tp4 = MustMake(Config("llama-3-8b", "h100", 4));
  ASSERT_NE(tp1, nullptr);
  ASSERT_NE(tp4, nullptr);
  EXPECT_LT(tp4->PrefillSeconds(8192), 0.5 * tp1->PrefillSeconds(8192));
  EXPECT_LT(tp4->DecodeStepSeconds(1, 1000), tp1->DecodeStepSeconds(1, 1000));
}

TEST(ReplicaModelTest, A100IsSlowerThanH100) {
  auto h100 = MustMake(Config("llama-2-70b", "h100", 4));
  auto a100 = MustMake(Config("llama-2-70b", "a100", 4));
  ASSERT_NE(h100, nullptr);
  ASSERT_NE(a100, nullptr);
  EXPECT_GT(a100->PrefillSeconds(2048), 1.5 * h100->PrefillSeconds(2048));
  EXPECT_GT(a100->DecodeStepSeconds(16, 16 * 600), h100->DecodeStepSeconds(16, 16 * 600));
}

struct BadConfigCase {
  const char* name;
  ReplicaModelConfig config;
  ErrorCode code;
  const char* field;
};

class BadReplicaConfigTest : public ::testing::TestWithParam<BadConfigCase> {};

TEST_P(BadReplicaConfigTest, NamesTheField) {
  const BadConfigCase& c = GetParam();
  auto model = MakeReplicaModel(c.config);
  ASSERT_FALSE(model.has_value());
  EXPECT_EQ(model.error().code, c.code) << model.error().ToString();
  EXPECT_EQ(model.error().field, c.field) << model.error().ToString();
  EXPECT_FALSE(model.error().message.empty());
}

ReplicaModelConfig With(void (*edit)(ReplicaModelConfig&)) {
  ReplicaModelConfig c;
  edit(c);
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadReplicaConfigTest,
    ::testing::Values(
        BadConfigCase{"UnknownModel", Config("gpt-5", "h100", 1), ErrorCode::kInvalidArgument,
                      "model"},
        BadConfigCase{"UnknownGpu", Config("llama-3-8b", "tpu", 1), ErrorCode::kInvalidArgument,
                      "gpu"},
        BadConfigCase{"OddTensorParallel", Config("llama-3-8b", "h100", 3),
                      ErrorCode::kInvalidArgument, "tensor_parallel"},
        BadConfigCase{"WeightsDoNotFit", Config("llama-2-70b", "h100", 1),
                      ErrorCode::kResourceExhausted, "tensor_parallel"},
        BadConfigCase{"NoA100ProfileFor8b", Config("llama-3-8b", "a100", 1), ErrorCode::kNotFound,
                      "gpu"},
        BadConfigCase{"ZeroBatch", With([](ReplicaModelConfig& c) { c.max_batch_size = 0; }),
                      ErrorCode::kInvalidArgument, "max_batch_size"},
        BadConfigCase{"ZeroChunk", With([](ReplicaModelConfig& c) { c.max_batched_tokens = 0; }),
                      ErrorCode::kInvalidArgument, "max_batched_tokens"},
        BadConfigCase{"NegativeKv", With([](ReplicaModelConfig& c) { c.kv_cache_tokens = -1; }),
                      ErrorCode::kInvalidArgument, "kv_cache_tokens"}),
    [](const ::testing::TestParamInfo<BadConfigCase>& info) { return info.param.name; });

// A chunked-prefill iteration fused with a decode step reads the weights once: it costs at
// least either part alone and never more than both back to back (which paid the fixed
// per-step cost twice), and reduces to the plain step when either part is empty.
TEST(ReplicaModelTest, MixedStepPaysTheFixedCostOnce) {
  for (const ReplicaModelConfig& c : SupportedConfigs()) {
    auto model = MustMake(c);
    ASSERT_NE(model, nullptr);
    SCOPED_TRACE(c.model + " " + c.gpu + " tp" + std::to_string(c.tensor_parallel));
    for (int64_t n : {64, 512, 2048, 8192}) {
      for (int b : {1, 16, 64, 256}) {
        const int64_t context = int64_t{b} * 1500;
        const double prefill = model->PrefillSeconds(n);
        const double decode = model->DecodeStepSeconds(b, context);
        const double mixed = model->MixedStepSeconds(PrefillWork::Prompt(n), b, context);
        EXPECT_GE(mixed, std::max(prefill, decode) - 1e-12) << n << " " << b;
        EXPECT_LE(mixed, prefill + decode + 1e-12) << n << " " << b;
      }
    }
    EXPECT_DOUBLE_EQ(model->MixedStepSeconds({}, 32, 50000), model->DecodeStepSeconds(32, 50000));
    EXPECT_DOUBLE_EQ(model->MixedStepSeconds(PrefillWork::Prompt(4096), 0, 0),
                     model->PrefillSeconds(4096));
  }
  // Llama-3-8B on one H100, a 512-token chunk beside 16 decoding sequences (memory-bound):
  // fusing saves at least the 1.5 ms per-step overhead, which the old sum paid twice.
  auto model = MustMake(Config("llama-3-8b", "h100", 1));
  ASSERT_NE(model, nullptr);
  const double separate = model->PrefillSeconds(512) + model->DecodeStepSeconds(16, 16 * 1500);
  EXPECT_GT(separate - model->MixedStepSeconds(PrefillWork::Prompt(512), 16, 16 * 1500), 1.5e-3);
}

// Attention is each prompt's own: a prompt's chunks add up to its n^2, and prompts fused into
// one step do not attend to each other.
TEST(ReplicaModelTest, PrefillWorkChargesAttentionPerPrompt) {
  PrefillWork chunks;
  chunks.AddChunk(0, 3000);
  chunks.AddChunk(3000, 5000);  // the rest of the same prompt, in a later step
  EXPECT_EQ(chunks.tokens, 8000);
  EXPECT_DOUBLE_EQ(chunks.attention_tokens2, 8000.0 * 8000.0);
  PrefillWork two_prompts;
  two_prompts.AddChunk(0, 4096);
  two_prompts.AddChunk(0, 4096);
  EXPECT_DOUBLE_EQ(two_prompts.attention_tokens2, 2 * 4096.0 * 4096.0);
  PrefillWork nothing;
  nothing.AddChunk(100, 0);
  EXPECT_EQ(nothing.tokens, 0);
  EXPECT_EQ(nothing.attention_tokens2, 0);
}

// Llama-3-8B on one H100: a step prefilling two 4096-token prompts costs two prompts'
// attention, clearly less than one 8192-token prompt (the chunk treated as one sequence,
// which charged 2 x 4096^2 more); the second chunk of a prompt pays for attending to its
// first.
TEST(ReplicaModelTest, FusedPromptsPayTheirOwnAttentionOnly) {
  auto model = MustMake(Config("llama-3-8b", "h100", 1));
  ASSERT_NE(model, nullptr);
  PrefillWork two;
  two.AddChunk(0, 4096);
  two.AddChunk(0, 4096);
  const double one_prompt = model->PrefillSeconds(8192);
  const double two_prompts = model->MixedStepSeconds(two, 0, 0);
  // 2 x 4096^2 token^2 of attention at 2 layers x hidden / (FLOP/s x 0.5) each: ~6 ms.
  EXPECT_GT(one_prompt - two_prompts, 4e-3);
  PrefillWork second_half;
  second_half.AddChunk(4096, 4096);
  EXPECT_GT(model->MixedStepSeconds(second_half, 0, 0) - model->PrefillSeconds(4096), 4e-3);
}

}  // namespace
}  // namespace gpuscale::sim
