#include "alloc/model_size.h"

#include <gtest/gtest.h>

namespace gpuscale::alloc {
namespace {

struct NameCase {
  const char* model;
  std::optional<double> params;
};

class ModelNameTest : public ::testing::TestWithParam<NameCase> {};

TEST_P(ModelNameTest, ParsesParameterCountFromName) {
  const NameCase& c = GetParam();
  const std::optional<double> params = ParamCountFromModelName(c.model);
  if (!c.params) {
    EXPECT_FALSE(params.has_value()) << c.model << " -> " << params.value_or(0);
    return;
  }
  ASSERT_TRUE(params.has_value()) << c.model;
  EXPECT_NEAR(*params, *c.params, *c.params * 0.005) << c.model;
}

INSTANTIATE_TEST_SUITE_P(
    Names, ModelNameTest,
    ::testing::Values(NameCase{"meta-llama/Llama-3.1-70B-Instruct", 70e9},
                      NameCase{"Qwen/Qwen2.5-7B", 7e9}, NameCase{"Qwen2.5-0.5B-Instruct", 0.5e9},
                      NameCase{"mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7e9},
                      NameCase{"deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1.5e9},
                      NameCase{"facebook/opt-125m", 125e6}, NameCase{"tiny-500M", 500e6},
                      NameCase{"meta-llama/Llama-2-13b-chat-hf", 13e9},
                      // The total wins over the active-parameter token.
                      NameCase{"Qwen/Qwen3-30B-A3B", 30e9},
                      // Billions beat a context-length "1M".
                      NameCase{"Qwen/Qwen2.5-7B-Instruct-1M", 7e9},
                      NameCase{"openai/gpt-oss-20b", 20e9}, NameCase{"llama3:8b", 8e9},
                      // No size in the name.
                      NameCase{"gpt2", std::nullopt},
                      NameCase{"deepseek-ai/DeepSeek-V3", std::nullopt},
                      NameCase{"microsoft/Phi-3-mini-4k-instruct", std::nullopt},
                      NameCase{"", std::nullopt}));

TEST(ModelNameTest, MixtralLargeStaysWithinFivePercentAbovePublished) {
  const std::optional<double> params = ParamCountFromModelName("Mixtral-8x22B");
  ASSERT_TRUE(params.has_value());
  EXPECT_GE(*params, 141e9);
  EXPECT_LE(*params, 141e9 * 1.05);
}

struct DtypeCase {
  const char* dtype;
  std::optional<double> bytes;
};

class DtypeTest : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(DtypeTest, MapsPrecisionToBytesPerParameter) {
  EXPECT_EQ(BytesPerParameter(GetParam().dtype), GetParam().bytes) << GetParam().dtype;
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, DtypeTest,
    ::testing::Values(DtypeCase{"fp32", 4.0}, DtypeCase{"float32", 4.0}, DtypeCase{"bf16", 2.0},
                      DtypeCase{"BFloat16", 2.0}, DtypeCase{"fp16", 2.0}, DtypeCase{"half", 2.0},
                      DtypeCase{"auto", 2.0}, DtypeCase{"fp8", 1.0}, DtypeCase{"fp8_e4m3", 1.0},
                      DtypeCase{"int8", 1.0}, DtypeCase{"int4", 0.5}, DtypeCase{"awq", 0.5},
                      DtypeCase{"AWQ_marlin", 0.5}, DtypeCase{"gptq", 0.5},
                      DtypeCase{"float64", std::nullopt}, DtypeCase{"", std::nullopt},
                      DtypeCase{"bogus", std::nullopt}));

}  // namespace
}  // namespace gpuscale::alloc
