#include "config/task_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "alloc/requirements.h"

namespace gpuscale::config {
namespace {

using alloc::ParamScalar;
using ::testing::HasSubstr;

Result<alloc::TaskSpec> ParseTaskYaml(std::string_view text) {
  return ParseTaskText(text, "task.yaml");
}

TEST(TaskFileTest, ParsesYamlTaskWithScalarsAndLists) {
  Result<alloc::TaskSpec> task = ParseTaskYaml(R"(name: sweep
model: meta-llama/Llama-3.1-70B-Instruct
dtype: fp8
gpu_memory_mb: 81559
parameters:
  tp-size: [2, 4]
  gpu-memory-utilization: 0.9
  enforce-eager: true
  kv-cache-dtype: "auto"
  max-num-seqs: "256"
)");
  ASSERT_TRUE(task.has_value()) << task.error().ToString();
  EXPECT_EQ(task->name, "sweep");
  EXPECT_EQ(task->model, "meta-llama/Llama-3.1-70B-Instruct");
  EXPECT_EQ(task->dtype, "fp8");
  EXPECT_EQ(task->gpu_memory_mb, 81559);
  const alloc::ParamValue& tp = task->parameters.at("tp-size");
  EXPECT_TRUE(tp.is_list);
  EXPECT_EQ(tp.line, 6);
  EXPECT_EQ(tp.items, (std::vector<ParamScalar>{int64_t{2}, int64_t{4}}));
  EXPECT_EQ(task->parameters.at("gpu-memory-utilization").items[0], ParamScalar(0.9));
  EXPECT_EQ(task->parameters.at("enforce-eager").items[0], ParamScalar(true));
  EXPECT_EQ(task->parameters.at("kv-cache-dtype").items[0], ParamScalar(std::string("auto")));
  // Quoted stays a string, as in JSON.
  EXPECT_EQ(task->parameters.at("max-num-seqs").items[0], ParamScalar(std::string("256")));
}

TEST(TaskFileTest, ParsesJsonTaskInReferenceShape) {
  Result<alloc::TaskSpec> task = ParseTaskYaml(
      R"({"model": {"id_or_path": "Qwen/Qwen2.5-7B"}, "params_b": 7.6,
          "parameters": {"tp_size": [1, 2], "pp_size": 1}})");
  ASSERT_TRUE(task.has_value()) << task.error().ToString();
  EXPECT_EQ(task->model, "Qwen/Qwen2.5-7B");
  EXPECT_EQ(task->params_b, 7.6);
  Result<alloc::Requirement> r = alloc::EstimateRequirement(*task);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->gpus, 2);
}

TEST(TaskFileTest, LoadsTheShippedExample) {
  Result<alloc::TaskSpec> task =
      LoadTaskFile(std::string(GPUSCALE_SOURCE_DIR) + "/examples/task.yaml");
  ASSERT_TRUE(task.has_value()) << task.error().ToString();
  EXPECT_FALSE(task->model.empty());
  EXPECT_TRUE(alloc::EstimateRequirement(*task).has_value());
}

TEST(TaskFileTest, MissingFileIsNotFound) {
  Result<alloc::TaskSpec> task = LoadTaskFile("/nonexistent/task.yaml");
  ASSERT_FALSE(task.has_value());
  EXPECT_EQ(task.error().code, ErrorCode::kNotFound);
}

struct BadCase {
  std::string name;
  std::string text;
  std::string expected;  // Error::ToString() must contain this
};

class TaskFileBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(TaskFileBadInputTest, NamesFieldAndLine) {
  Result<alloc::TaskSpec> task = ParseTaskYaml(GetParam().text);
  ASSERT_FALSE(task.has_value());
  EXPECT_EQ(task.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(task.error().ToString(), HasSubstr(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TaskFileBadInputTest,
    ::testing::Values(
        BadCase{"BadTp", "model: m-7B\nparameters:\n  pp: 1\n  tp: abc\n",
                "parameters.tp: expected a positive integer or a list of them (line 4)"},
        BadCase{"BadTpListItem", "model: m-7B\nparameters:\n  tp: [1, 0]\n",
                "parameters.tp: expected a positive integer or a list of them (line 3)"},
        BadCase{"NestedValue", "model: m\nparameters:\n  tp: {a: 1}\n",
                "parameters.tp: expected a number, string, bool or a list of them (line 3)"},
        BadCase{"NestedListItem", "model: m\nparameters:\n  tp: [[1]]\n",
                "parameters.tp[0]: expected a number"},
        BadCase{"EmptyList", "model: m\nparameters:\n  tp: []\n",
                "parameters.tp: expected at least one value"},
        BadCase{"ParametersNotMap", "model: m\nparameters: [1]\n",
                "parameters: expected a mapping"},
        BadCase{"MissingModel", "parameters: {tp: 1}\n", "model: required field is missing"},
        BadCase{"EmptyModel", "model: ''\n", "model: expected a model id or path"},
        BadCase{"UnknownField", "model: m\ntp: 2\n", "tp: unknown field"},
        BadCase{"UnknownModelField", "model: {id: x}\n", "model.id: unknown field"},
        BadCase{"BadDtype", "model: m\ndtype: fp64\n", "dtype: unknown dtype 'fp64'"},
        BadCase{"BadParamsB", "model: m\nparams_b: -3\n", "params_b: expected a positive"},
        BadCase{"BadGpuMemory", "model: m\ngpu_memory_mb: 0\n",
                "gpu_memory_mb: expected a positive"},
        BadCase{"BadFraction", "model: m\nparameters:\n  mem-fraction-static: 2\n",
                "parameters.mem-fraction-static: expected a fraction in (0, 1]"},
        BadCase{"NotAMap", "- a\n- b\n", "expected a mapping"},
        BadCase{"SequenceKey", "model: m\n? [1, 2]\n: 3\n", ""},
        BadCase{"Syntax", "model: [unclosed\n", "cannot parse task.yaml"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gpuscale::config
