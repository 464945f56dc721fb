#include "alloc/requirements.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace gpuscale::alloc {
namespace {

using ::testing::HasSubstr;

ParamValue Int(int64_t v, int line = 0) { return ParamValue::Scalar(v, line); }
ParamValue Ints(std::vector<int64_t> vs, int line = 0) {
  std::vector<ParamScalar> items(vs.begin(), vs.end());
  return ParamValue::List(std::move(items), line);
}

TaskSpec Task(std::string model, std::map<std::string, ParamValue> parameters = {}) {
  TaskSpec task;
  task.model = std::move(model);
  task.parameters = std::move(parameters);
  return task;
}

// The documented weights formula, recomputed independently.
int64_t WeightsFormulaMb(double params, double bytes, int shards) {
  return static_cast<int64_t>(std::ceil(params * bytes / shards / (1024.0 * 1024.0) * 1.2 + 1024));
}

struct WorldCase {
  std::map<std::string, ParamValue> parameters;
  int world_size;
};

class WorldSizeTest : public ::testing::TestWithParam<WorldCase> {};

TEST_P(WorldSizeTest, MultipliesParallelFactorsOverLargestGridPoint) {
  Result<Requirement> r = EstimateRequirement(Task("Qwen2.5-7B", GetParam().parameters));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->world_size, GetParam().world_size);
  EXPECT_EQ(r->gpus, GetParam().world_size);
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, WorldSizeTest,
    ::testing::Values(
        WorldCase{{}, 1}, WorldCase{{{"tensor-parallel-size", Int(4)}}, 4},
        WorldCase{{{"tp-size", Int(4)}}, 4}, WorldCase{{{"tp_size", Int(4)}}, 4},
        WorldCase{{{"tp", Int(4)}}, 4},
        WorldCase{{{"pipeline-parallel-size", Int(2)}, {"tp", Int(2)}}, 4},
        WorldCase{{{"pp-size", Int(3)}}, 3}, WorldCase{{{"pp_size", Int(3)}}, 3},
        WorldCase{{{"pp", Int(3)}}, 3},
        WorldCase{{{"data-parallel-size", Int(2)}, {"tp", Int(2)}}, 4},
        WorldCase{{{"dp-size", Int(5)}}, 5}, WorldCase{{{"dp_size", Int(5)}}, 5},
        WorldCase{{{"dp", Int(5)}}, 5},
        // dp, cp and dcp share GPUs: the largest of them counts, not their product.
        WorldCase{{{"dp", Int(2)}, {"context-parallel-size", Int(4)}}, 4},
        WorldCase{{{"cp-size", Int(3)}, {"dp", Int(2)}}, 3}, WorldCase{{{"cp_size", Int(3)}}, 3},
        WorldCase{{{"cp", Int(3)}}, 3},
        WorldCase{{{"decode-context-parallel-size", Int(6)}, {"dp", Int(2)}}, 6},
        WorldCase{{{"dcp-size", Int(2)}}, 2}, WorldCase{{{"dcp_size", Int(2)}}, 2},
        WorldCase{{{"dcp", Int(2)}}, 2},
        WorldCase{{{"tp", Int(2)}, {"pp", Int(2)}, {"dp", Int(2)}, {"cp", Int(3)}}, 12},
        // Grids: the largest point.
        WorldCase{{{"tp-size", Ints({1, 2, 4})}}, 4},
        WorldCase{{{"tp", Ints({2, 1})}, {"pp", Ints({1, 2})}, {"dp", Ints({1, 3})}}, 12},
        // vLLM's Python keyword spellings (LLM(tensor_parallel_size=...)).
        WorldCase{{{"tensor_parallel_size", Int(2)},
                   {"pipeline_parallel_size", Int(2)},
                   {"data_parallel_size", Int(3)}},
                  12},
        WorldCase{{{"context_parallel_size", Int(3)}}, 3},
        WorldCase{{{"decode_context_parallel_size", Int(2)}}, 2},
        // Unrelated parameters are ignored.
        WorldCase{{{"max-num-seqs", Ints({64, 128})}, {"tp", Int(2)}}, 2}));

TEST(EstimateTest, AParallelLookingParameterItDoesNotCountIsNamedInAWarning) {
  Result<Requirement> r = EstimateRequirement(
      Task("Qwen2.5-7B", {{"tensor_parallel_size", Int(2)},
                          {"expert_parallel_size", Int(4)},
                          {"max-num-seqs", Int(64)}}));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->gpus, 2);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("'expert_parallel_size' looks like a parallel size"));
  EXPECT_THAT(r->explanation, HasSubstr("warning: parameter 'expert_parallel_size'"));
  EXPECT_TRUE(EstimateRequirement(Task("Qwen2.5-7B", {{"tp", Int(2)}}))->warnings.empty());
  EXPECT_EQ(EstimateRequirement(Task("Qwen2.5-7B", {{"ep_size", Int(2)}}))->warnings.size(), 1u);
  EXPECT_FALSE(EstimateRequirement(Task("Qwen2.5-7B", {{"tensor_parallel_size", Int(2)},
                                                       {"tp", Int(2)}}))
                   .has_value())
      << "two spellings of one factor";
}

TEST(EstimateTest, SeventyBillionBf16MatchesWeightsFormula) {
  Result<Requirement> r =
      EstimateRequirement(Task("meta-llama/Llama-3.1-70B-Instruct", {{"tp", Int(4)}}));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_mb_per_gpu, WeightsFormulaMb(70e9, 2, 4));
  EXPECT_THAT(r->explanation, HasSubstr("70e9 parameters (from the model name)"));
  EXPECT_THAT(r->explanation, HasSubstr("bf16 (default)"));
  EXPECT_THAT(r->explanation, HasSubstr("tp 4 x pp 1 x max(dp 1, cp 1, dcp 1) = 4"));
}

TEST(EstimateTest, GridUsesLeastShardedPointForMemory) {
  Result<Requirement> r =
      EstimateRequirement(Task("Qwen2.5-7B", {{"tp", Ints({1, 2, 4})}, {"pp", Ints({2, 1})}}));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->gpus, 8);
  EXPECT_EQ(r->memory_mb_per_gpu, WeightsFormulaMb(7e9, 2, 1));
}

struct EstimateDtypeCase {
  std::string dtype;                        // task field
  std::map<std::string, ParamValue> extra;  // engine parameters
  double bytes;
};

class EstimateDtypeTest : public ::testing::TestWithParam<EstimateDtypeCase> {};

TEST_P(EstimateDtypeTest, ScalesWeightsByBytesPerParameter) {
  TaskSpec task = Task("Llama-3.1-8B", GetParam().extra);
  task.dtype = GetParam().dtype;
  Result<Requirement> r = EstimateRequirement(task);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_mb_per_gpu, WeightsFormulaMb(8e9, GetParam().bytes, 1));
}

ParamValue Str(std::string s) { return ParamValue::Scalar(std::move(s)); }

INSTANTIATE_TEST_SUITE_P(
    Dtypes, EstimateDtypeTest,
    ::testing::Values(EstimateDtypeCase{"", {}, 2.0}, EstimateDtypeCase{"fp32", {}, 4.0},
                      EstimateDtypeCase{"fp16", {}, 2.0}, EstimateDtypeCase{"fp8", {}, 1.0},
                      EstimateDtypeCase{"int8", {}, 1.0}, EstimateDtypeCase{"int4", {}, 0.5},
                      EstimateDtypeCase{"awq", {}, 0.5}, EstimateDtypeCase{"gptq", {}, 0.5},
                      // From engine parameters when the task field is absent.
                      EstimateDtypeCase{
                          "", {{"quantization", Str("awq")}, {"dtype", Str("half")}}, 0.5},
                      EstimateDtypeCase{"", {{"dtype", Str("float32")}}, 4.0},
                      // The task field wins over engine parameters.
                      EstimateDtypeCase{"fp8", {{"dtype", Str("float32")}}, 1.0}));

// Found by the task_file fuzzer: an absurd size must saturate, not overflow int64.
TEST(EstimateTest, AbsurdParamsBSaturatesInsteadOfOverflowing) {
  TaskSpec task = Task("model-9" + std::string(60, '9') + "B");
  Result<Requirement> r = EstimateRequirement(task);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_mb_per_gpu, int64_t{1'000'000'000'000'000});
}

TEST(EstimateTest, ExplicitParamsBOverridesModelName) {
  TaskSpec task = Task("my-finetune");
  task.params_b = 46.7;
  Result<Requirement> r = EstimateRequirement(task);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_mb_per_gpu, WeightsFormulaMb(46.7e9, 2, 1));
  EXPECT_THAT(r->explanation, HasSubstr("(params_b)"));
}

TEST(EstimateTest, UnknownModelSizeUsesFloorAndSaysSo) {
  Result<Requirement> r = EstimateRequirement(Task("deepseek-ai/DeepSeek-V3"));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_mb_per_gpu, kUnknownModelMemoryMb);
  EXPECT_THAT(r->explanation, HasSubstr("set params_b"));
}

TEST(EstimateTest, GpuMemoryUtilizationTakesShareOfDefaultTotal) {
  Result<Requirement> r =
      EstimateRequirement(Task("Qwen2.5-7B", {{"gpu-memory-utilization", Str("x")}}));
  ASSERT_FALSE(r.has_value());  // a string is not a fraction
  r = EstimateRequirement(
      Task("Qwen2.5-7B", {{"gpu-memory-utilization", ParamValue::Scalar(0.9)}}));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->memory_mb_per_gpu, static_cast<int64_t>(std::ceil(0.9 * 81559)));
  EXPECT_THAT(r->explanation, HasSubstr("default: H100 80GB"));
}

TEST(EstimateTest, MemoryFractionTotalComesFromTaskThenBackendThenDefault) {
  TaskSpec task = Task("Qwen2.5-7B", {{"mem-fraction-static", ParamValue::Scalar(0.5)}});
  Result<Requirement> r = EstimateRequirement(task, EstimateOptions{40000});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->memory_mb_per_gpu, 20000);
  EXPECT_THAT(r->explanation, HasSubstr("reported by the GPU backend"));
  task.gpu_memory_mb = 24000;
  r = EstimateRequirement(task, EstimateOptions{40000});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->memory_mb_per_gpu, 12000);
  EXPECT_THAT(r->explanation, HasSubstr("task field gpu_memory_mb"));
}

TEST(EstimateTest, MemoryFractionGridTakesLargestAndWarnsWhenWeightsDoNotFit) {
  TaskSpec task =
      Task("Llama-3.1-70B", {{"gpu_memory_utilization", ParamValue::List({0.5, 0.25})}});
  task.gpu_memory_mb = 81559;
  Result<Requirement> r = EstimateRequirement(task);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->memory_mb_per_gpu, static_cast<int64_t>(std::ceil(0.5 * 81559)));
  EXPECT_THAT(r->explanation, HasSubstr("warning: the model needs about"));
}

struct BadCase {
  std::string name;
  TaskSpec task;
  std::string field;
  std::string message;
};

class EstimateBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(EstimateBadInputTest, NamesFieldAndLine) {
  Result<Requirement> r = EstimateRequirement(GetParam().task);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().field, GetParam().field);
  EXPECT_THAT(r.error().message, HasSubstr(GetParam().message));
  EXPECT_FALSE(ValidateTask(GetParam().task).has_value());
}

TaskSpec WithDtype(std::string dtype) {
  TaskSpec t = Task("Qwen2.5-7B");
  t.dtype = std::move(dtype);
  return t;
}
TaskSpec WithParamsB(double b) {
  TaskSpec t = Task("x");
  t.params_b = b;
  return t;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EstimateBadInputTest,
    ::testing::Values(
        BadCase{"Zero", Task("m", {{"tp", Int(0, 4)}}), "parameters.tp",
                "expected a positive integer or a list of them (line 4)"},
        BadCase{"Fraction", Task("m", {{"tp", ParamValue::Scalar(2.5, 3)}}), "parameters.tp",
                "expected a positive integer"},
        BadCase{"String", Task("m", {{"pp-size", ParamValue::Scalar(std::string("two"))}}),
                "parameters.pp-size", "expected a positive integer"},
        BadCase{"Bool", Task("m", {{"dp", ParamValue::Scalar(true)}}), "parameters.dp",
                "expected a positive integer"},
        BadCase{"BadListItem", Task("m", {{"tp", ParamValue::List({int64_t{1}, -2}, 7)}}),
                "parameters.tp", "(line 7)"},
        BadCase{"EmptyList", Task("m", {{"cp", ParamValue::List({})}}), "parameters.cp",
                "expected a positive integer"},
        BadCase{"TwoSpellings", Task("m", {{"tp", Int(2)}, {"tp-size", Int(2)}}), "parameters.tp",
                "give only one spelling"},
        BadCase{"HugeWorld",
                Task("m", {{"tp", Int(1 << 20)}, {"pp", Int(1 << 20)}, {"dp", Int(1 << 20)}}),
                "parameters", "exceeds the supported"},
        BadCase{"FractionAboveOne",
                Task("m", {{"gpu-memory-utilization", ParamValue::Scalar(1.5)}}),
                "parameters.gpu-memory-utilization", "expected a fraction in (0, 1]"},
        BadCase{"UnknownDtype", WithDtype("fp64"), "dtype", "unknown dtype 'fp64'"},
        BadCase{"UnknownQuantization", Task("m", {{"quantization", Str("magic")}}),
                "parameters.quantization", "unknown precision"},
        BadCase{"NegativeParamsB", WithParamsB(-1), "params_b", "expected a positive number"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gpuscale::alloc
