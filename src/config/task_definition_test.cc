#include "config/task_definition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "task/grid.h"

namespace gpuscale::config {
namespace {

using ::testing::HasSubstr;

Result<task::TaskDefinition> Parse(std::string_view text) {
  return ParseTaskDefinitionText(text, "task.yaml");
}

constexpr char kMinimal[] = R"(name: sweep
model: meta-llama/Llama-3.1-8B-Instruct
server:
  command: [vllm, serve, "{model}", --port, "{port}"]
)";

TEST(TaskDefinitionTest, MinimalTaskGetsDefaults) {
  Result<task::TaskDefinition> task = Parse(kMinimal);
  ASSERT_TRUE(task.has_value()) << task.error().ToString();
  EXPECT_EQ(task->name, "sweep");
  EXPECT_EQ(task->spec.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(task->server_command.size(), 5u);
  EXPECT_EQ(task->readiness_path, "/health");
  EXPECT_EQ(task->startup_timeout.count(), 600);
  EXPECT_EQ(task->bench.mode, loadgen::ArrivalMode::kClosedLoop);
  EXPECT_EQ(task->bench.concurrency, 8);
  EXPECT_EQ(task->bench.input.mean_tokens, 256);
  EXPECT_EQ(task->bench.output.mean_tokens, 128);
  EXPECT_EQ(task->bench.duration_seconds, 30);
  EXPECT_EQ(task->gpu_wait_timeout.count(), 300);
  EXPECT_EQ(task->priority, 0);
  EXPECT_EQ(task->max_parallel, 0);
  EXPECT_EQ(task->objective.kind, task::ObjectiveKind::kMaxThroughput);
}

TEST(TaskDefinitionTest, ReadsEveryField) {
  Result<task::TaskDefinition> task = Parse(R"(name: full-1
model: {id_or_path: Qwen/Qwen2.5-7B}
params_b: 7.6
dtype: bf16
gpu_memory_mb: 81559
parameters:
  tp: [1, 2]
server:
  command: [srv, "--tp={tp}", "--gpus={gpus}", "{gpu_count}"]
  env: {A: "1", B: two}
  readiness_path: /ready
  startup_timeout_seconds: 90
benchmark:
  concurrency: 4
  rate_per_second: 2.5
  input_tokens: 100
  input_stddev_tokens: 10
  output_tokens: 50
  output_stddev_tokens: 5
  duration_seconds: 12
  drain_timeout_seconds: 3
  seed: 9
gpu_wait_timeout_seconds: 0
priority: -2
max_parallel: 3
objective: {maximize: throughput, max_latency: {e2e_p99: 2.5}}
)");
  ASSERT_TRUE(task.has_value()) << task.error().ToString();
  EXPECT_EQ(task->spec.params_b, 7.6);
  EXPECT_EQ(task->env,
            (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "two"}}));
  EXPECT_EQ(task->readiness_path, "/ready");
  EXPECT_EQ(task->startup_timeout.count(), 90);
  EXPECT_EQ(task->bench.mode, loadgen::ArrivalMode::kPoisson);
  EXPECT_EQ(task->bench.concurrency, 4);
  EXPECT_EQ(task->bench.rate_per_second, 2.5);
  EXPECT_EQ(task->bench.input.stddev_tokens, 10);
  EXPECT_EQ(task->bench.output.mean_tokens, 50);
  EXPECT_EQ(task->bench.drain_timeout_seconds, 3);
  EXPECT_EQ(task->bench.seed, 9u);
  EXPECT_EQ(task->gpu_wait_timeout.count(), 0);
  EXPECT_EQ(task->priority, -2);
  EXPECT_EQ(task->max_parallel, 3);
  EXPECT_EQ(task->objective.kind, task::ObjectiveKind::kMaxThroughputUnderLatency);
  EXPECT_EQ(task->objective.latency_metric, "e2e");
  EXPECT_EQ(task->objective.percentile, 99);
  EXPECT_EQ(task->objective.latency_ceiling_seconds, 2.5);
}

TEST(TaskDefinitionTest, ReadsMinimizeObjective) {
  Result<task::TaskDefinition> task =
      Parse(std::string(kMinimal) + "objective: {minimize: tpot_p50, min_throughput_rps: 5}\n");
  ASSERT_TRUE(task.has_value()) << task.error().ToString();
  EXPECT_EQ(task->objective.kind, task::ObjectiveKind::kMinLatency);
  EXPECT_EQ(task->objective.latency_metric, "tpot");
  EXPECT_EQ(task->objective.percentile, 50);
  EXPECT_EQ(task->objective.throughput_floor_rps, 5);
}

TEST(TaskDefinitionTest, ParsesJson) {
  Result<task::TaskDefinition> task = Parse(
      R"({"name": "j", "model": "m-7b", "parameters": {"max-num-seqs": [8, 16]},
          "server": {"command": ["s", "{max-num-seqs}"]}, "objective": {"minimize": "itl_p90"}})");
  ASSERT_TRUE(task.has_value()) << task.error().ToString();
  EXPECT_EQ(task->spec.parameters.at("max-num-seqs").items.size(), 2u);
  EXPECT_EQ(task->objective.latency_metric, "itl");
}

struct TaskErrorCase {
  std::string extra;  // appended to kMinimal (or the whole text when it starts with '!')
  std::string field;
  std::string substring;  // in the message
};

TEST(TaskDefinitionTest, RejectsBadFieldsNamingFieldAndLine) {
  const std::string server = "server:\n  command: [s]\n";
  const std::vector<TaskErrorCase> cases = {
      {"!model: m\n" + server, "name", "required"},
      {"!name: Bad_Name\nmodel: m\n" + server, "name", "(line 1)"},
      {"!name: " + std::string(41, 'a') + "\nmodel: m\n" + server, "name", "40"},
      {"!name: a\nmodel: m\n", "server", "required"},
      {"!name: a\nmodel: m\nserver:\n  command: []\n", "server.command", "(line 4)"},
      {"!name: a\nmodel: m\nserver:\n  command: [s, \"{nope}\"]\n", "server.command[1]",
       "unknown placeholder '{nope}'"},
      {"!name: a\nmodel: m\nserver:\n  command: [s, \"{port\"]\n", "server.command[1]", "unclosed"},
      {"!name: a\nmodel: m\nserver:\n  command: [s]\n  cmd: x\n", "server.cmd", "unknown field"},
      {"!name: a\nmodel: m\nserver:\n  command: [s]\n  readiness_path: health\n",
       "server.readiness_path", "'/'"},
      {"!name: a\nmodel: m\nserver:\n  command: [s]\n  startup_timeout_seconds: 0\n",
       "server.startup_timeout_seconds", "positive"},
      {"benchmark:\n  duration_seconds: 0\n", "benchmark.duration_seconds", "(line 6)"},
      {"benchmark:\n  concurrency: 0\n", "benchmark.concurrency", ">= 1"},
      {"benchmark:\n  concurrency: 1.5\n", "benchmark.concurrency", ">= 1"},
      {"benchmark:\n  input_tokens: 0\n", "benchmark.input_tokens", ">= 1"},
      {"benchmark:\n  output_tokens: -3\n", "benchmark.output_tokens", ">= 1"},
      {"benchmark:\n  rate_per_second: 0\n", "benchmark.rate_per_second", "positive"},
      {"benchmark:\n  rps: 3\n", "benchmark.rps", "unknown field"},
      {"benchmark:\n  seed: -1\n", "benchmark.seed", ">= 0"},
      {"benchmark:\n  input_tokens: 1e12\n", "benchmark.input_tokens", ">= 1"},
      {"gpu_wait_timeout_seconds: -1\n", "gpu_wait_timeout_seconds", ">= 0"},
      {"max_parallel: -1\n", "max_parallel", ">= 0"},
      {"priority: high\n", "priority", "integer"},
      {"extra: 1\n", "extra", "unknown field"},
      {"objective: {maximize: latency}\n", "objective.maximize", "throughput"},
      {"objective: {minimize: ttft_p95}\n", "objective.minimize", "50, 90 or 99"},
      {"objective: {minimize: foo_p90}\n", "objective.minimize", "unknown latency metric"},
      {"objective: {minimize: ttft}\n", "objective.minimize", "ttft_p90"},
      {"objective: {maximize: throughput, minimize: ttft_p90}\n", "objective", "exactly one"},
      {"objective: {}\n", "objective", "exactly one"},
      {"objective: {maximize: throughput, min_throughput_rps: 3}\n", "objective.min_throughput_rps",
       "minimize"},
      {"objective: {minimize: ttft_p90, max_latency: {ttft_p90: 1}}\n", "objective.max_latency",
       "maximize"},
      {"objective: {maximize: throughput, max_latency: {ttft_p90: 0}}\n", "objective.max_latency",
       "positive"},
      {"objective: {maximize: throughput, max_latency: 0.5}\n", "objective.max_latency",
       "one entry"},
      {"objective: {minimize: ttft_p90, min_throughput_rps: -1}\n", "objective.min_throughput_rps",
       ">= 0"},
      {"objective: {maximise: throughput}\n", "objective.maximise", "unknown field"},
      {"parameters:\n  tp: [1, 0]\n", "parameters.tp", "line 6"},
  };
  for (const TaskErrorCase& c : cases) {
    const std::string text =
        c.extra[0] == '!' ? c.extra.substr(1) : std::string(kMinimal) + c.extra;
    Result<task::TaskDefinition> task = Parse(text);
    ASSERT_FALSE(task.has_value()) << text;
    EXPECT_EQ(task.error().code, ErrorCode::kInvalidArgument) << text;
    EXPECT_EQ(task.error().field, c.field) << text << "\n" << task.error().ToString();
    EXPECT_THAT(task.error().ToString(), HasSubstr(c.substring)) << text;
  }
}

TEST(TaskDefinitionTest, MalformedYamlIsAnErrorNotACrash) {
  for (std::string_view text : {"", "[1, 2]", "name: [", "{a: 1}: b", "name: x\nserver: [1]\n"}) {
    Result<task::TaskDefinition> task = Parse(text);
    EXPECT_FALSE(task.has_value()) << text;
  }
}

TEST(TaskDefinitionTest, LoadsTheShippedExamples) {
  Result<task::TaskDefinition> emulated = LoadTaskDefinitionFile(
      std::string(GPUSCALE_SOURCE_DIR) + "/examples/tasks/emulated-sweep.yaml");
  ASSERT_TRUE(emulated.has_value()) << emulated.error().ToString();
  EXPECT_EQ(emulated->name, "emulated-sweep");
  Result<std::vector<task::ExperimentPlan>> plans = task::ExpandGrid(*emulated);
  ASSERT_TRUE(plans.has_value());
  ASSERT_EQ(plans->size(), 6u);
  EXPECT_EQ(plans->back().gpus, 2);
  Result<std::vector<std::string>> argv =
      task::RenderServerArgv(*emulated, plans->back(), task::ArgvContext{9000, {0, 1}});
  ASSERT_TRUE(argv.has_value());
  EXPECT_EQ((*argv)[3], "9000");

  Result<task::TaskDefinition> vllm =
      LoadTaskDefinitionFile(std::string(GPUSCALE_SOURCE_DIR) + "/examples/tasks/vllm-sweep.yaml");
  ASSERT_TRUE(vllm.has_value()) << vllm.error().ToString();
  EXPECT_EQ(vllm->server_command[0], "vllm");
  EXPECT_EQ(vllm->bench.mode, loadgen::ArrivalMode::kPoisson);
  EXPECT_EQ(vllm->objective.kind, task::ObjectiveKind::kMinLatency);
  EXPECT_EQ(vllm->max_parallel, 2);
}

TEST(TaskDefinitionTest, MissingFileIsNotFound) {
  Result<task::TaskDefinition> task = LoadTaskDefinitionFile("/nonexistent/task.yaml");
  ASSERT_FALSE(task.has_value());
  EXPECT_EQ(task.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gpuscale::config
