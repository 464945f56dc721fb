#include "task/grid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::task {
namespace {

using alloc::ParamScalar;
using alloc::ParamValue;
using ::testing::HasSubstr;

TaskDefinition Task(std::map<std::string, ParamValue> parameters) {
  TaskDefinition task;
  task.name = "t";
  task.spec.model = "meta-llama/Llama-3.1-8B-Instruct";
  task.spec.parameters = std::move(parameters);
  return task;
}

std::string Text(const std::map<std::string, ParamScalar>& point) {
  std::string out;
  for (const auto& [name, value] : point) out += name + "=" + ParamText(value) + " ";
  return out;
}

TEST(GridTest, ExpandsTwoByThreeInNameOrderLastFastest) {
  TaskDefinition task =
      Task({{"tp", ParamValue::List({int64_t{1}, int64_t{2}}, 3)},
            {"max-num-seqs", ParamValue::List({int64_t{8}, int64_t{16}, int64_t{32}}, 4)}});
  Result<std::vector<ExperimentPlan>> plans = ExpandGrid(task);
  ASSERT_TRUE(plans.has_value()) << plans.error().ToString();
  ASSERT_EQ(plans->size(), 6u);
  // Names in map order: "max-num-seqs" < "tp", so tp varies fastest.
  const std::vector<std::string> expected = {"max-num-seqs=8 tp=1 ",  "max-num-seqs=8 tp=2 ",
                                             "max-num-seqs=16 tp=1 ", "max-num-seqs=16 tp=2 ",
                                             "max-num-seqs=32 tp=1 ", "max-num-seqs=32 tp=2 "};
  for (size_t i = 0; i < plans->size(); ++i) {
    EXPECT_EQ((*plans)[i].index, static_cast<int>(i));
    EXPECT_EQ(Text((*plans)[i].parameters), expected[i]);
    // Every list of the point's spec became the chosen scalar.
    for (const auto& [name, value] : (*plans)[i].spec.parameters) EXPECT_FALSE(value.is_list);
  }
}

TEST(GridTest, TensorParallelTwoPointNeedsTwoGpus) {
  TaskDefinition task =
      Task({{"tensor-parallel-size", ParamValue::List({int64_t{1}, int64_t{2}})}});
  Result<std::vector<ExperimentPlan>> plans = ExpandGrid(task);
  ASSERT_TRUE(plans.has_value()) << plans.error().ToString();
  ASSERT_EQ(plans->size(), 2u);
  EXPECT_EQ((*plans)[0].gpus, 1);
  EXPECT_EQ((*plans)[1].gpus, 2);
  // Weights split over two GPUs: less memory per GPU.
  EXPECT_GT((*plans)[0].memory_mb_per_gpu, (*plans)[1].memory_mb_per_gpu);
  EXPECT_FALSE((*plans)[1].requirement_explanation.empty());
}

TEST(GridTest, TaskWithoutListsIsOnePoint) {
  TaskDefinition task = Task({{"max-model-len", ParamValue::Scalar(int64_t{4096})}});
  Result<std::vector<ExperimentPlan>> plans = ExpandGrid(task);
  ASSERT_TRUE(plans.has_value());
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_EQ((*plans)[0].parameters.at("max-model-len"), ParamScalar(int64_t{4096}));
  EXPECT_EQ((*plans)[0].gpus, 1);

  Result<std::vector<ExperimentPlan>> none = ExpandGrid(Task({}));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->size(), 1u);
  EXPECT_TRUE((*none)[0].parameters.empty());
}

TEST(GridTest, EmptyListNamesParameterAndLine) {
  TaskDefinition task = Task({{"max-num-seqs", ParamValue::List({}, 7)}});
  Result<std::vector<ExperimentPlan>> plans = ExpandGrid(task);
  ASSERT_FALSE(plans.has_value());
  EXPECT_EQ(plans.error().field, "parameters.max-num-seqs");
  EXPECT_THAT(plans.error().message, HasSubstr("(line 7)"));
}

TEST(GridTest, TooManyPointsIsAnError) {
  std::vector<ParamScalar> values;
  for (int64_t i = 0; i < 40; ++i) values.emplace_back(std::in_place_type<int64_t>, i + 1);
  std::map<std::string, ParamValue> parameters;
  parameters["a"] = ParamValue::List(values);
  parameters["b"] = ParamValue::List(values);
  TaskDefinition task = Task(std::move(parameters));
  Result<std::vector<ExperimentPlan>> plans = ExpandGrid(task);
  ASSERT_FALSE(plans.has_value());
  EXPECT_EQ(plans.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(plans.error().field, "parameters");
  EXPECT_THAT(plans.error().message, HasSubstr("1024"));
}

TEST(GridTest, EstimatorErrorOfAPointNamesTheParameter) {
  TaskDefinition task = Task({{"tp", ParamValue::List({int64_t{1}, int64_t{0}}, 5)}});
  Result<std::vector<ExperimentPlan>> plans = ExpandGrid(task);
  ASSERT_FALSE(plans.has_value());
  EXPECT_EQ(plans.error().field, "parameters.tp");
  EXPECT_THAT(plans.error().message, HasSubstr("line 5"));
}

TEST(GridTest, ParamTextOfEachScalarType) {
  EXPECT_EQ(ParamText(ParamScalar(int64_t{4})), "4");
  EXPECT_EQ(ParamText(ParamScalar(0.9)), "0.9");
  EXPECT_EQ(ParamText(ParamScalar(2.0)), "2");
  EXPECT_EQ(ParamText(ParamScalar(true)), "true");
  EXPECT_EQ(ParamText(ParamScalar(false)), "false");
  EXPECT_EQ(ParamText(ParamScalar(std::string("fp8"))), "fp8");
}

struct RenderCase {
  std::string argument;
  std::string expected;  // empty when an error is expected
  std::string error_substring;
};

TEST(GridTest, RendersPlaceholders) {
  const std::vector<RenderCase> cases = {
      {"{port}", "8123", ""},
      {"{gpus}", "2,5", ""},
      {"{gpu_count}", "2", ""},
      {"{model}", "meta-llama/Llama-3.1-8B-Instruct", ""},
      {"{max-num-seqs}", "16", ""},
      {"--gpu-memory-utilization={gpu-memory-utilization}", "--gpu-memory-utilization=0.9", ""},
      {"http://127.0.0.1:{port}/v{gpu_count}", "http://127.0.0.1:8123/v2", ""},
      {"{{literal}} {{port}}", "{literal} {port}", ""},
      {"plain", "plain", ""},
      {"{nope}", "", "unknown placeholder '{nope}'"},
      {"{port", "", "unclosed '{'"},
      {"a}b", "", "unmatched '}'"},
  };
  TaskDefinition task = Task({});
  ExperimentPlan plan;
  plan.parameters = {{"max-num-seqs", int64_t{16}}, {"gpu-memory-utilization", 0.9}};
  const ArgvContext context{8123, {2, 5}};
  for (const RenderCase& c : cases) {
    task.server_command = {"serve", c.argument};
    Result<std::vector<std::string>> argv = RenderServerArgv(task, plan, context);
    if (c.error_substring.empty()) {
      ASSERT_TRUE(argv.has_value()) << c.argument << ": " << argv.error().ToString();
      EXPECT_EQ(*argv, (std::vector<std::string>{"serve", c.expected})) << c.argument;
    } else {
      ASSERT_FALSE(argv.has_value()) << c.argument;
      EXPECT_EQ(argv.error().field, "server.command[1]") << c.argument;
      EXPECT_THAT(argv.error().message, HasSubstr(c.error_substring)) << c.argument;
    }
  }
}

}  // namespace
}  // namespace gpuscale::task
