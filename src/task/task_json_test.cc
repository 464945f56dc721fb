#include "task/task_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::task {
namespace {

using alloc::ParamScalar;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Keys(const Json& j) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  return keys;
}

loadgen::BenchReport Report() {
  loadgen::BenchReport r;
  r.url = "http://127.0.0.1:8000";
  r.model = "m";
  r.elapsed_seconds = 30.5;
  r.requests_sent = 12;
  r.requests_completed = 10;
  r.requests_failed = 2;
  r.errors_by_kind = {{"http_500", 2}};
  r.input_tokens_total = 2560;
  r.output_tokens_total = 1280;
  r.request_throughput_per_second = 0.25;
  r.output_token_throughput_per_second = 41.5;
  r.input_token_throughput_per_second = 83.75;
  r.ttft_seconds = {10, 0.125, 0.05, 0.5, 0.1, 0.25, 0.375};
  r.e2e_latency_seconds = {10, 2.5, 1, 4, 2, 3, 3.5};
  r.requests_queued = 3;
  r.queue_wait_max_seconds = 0.5;
  return r;  // inter-token and tpot summaries stay empty (count 0)
}

gpu::GpuStats Stats() {
  gpu::GpuStats s;
  s.name = "NVIDIA H100 80GB HBM3";
  for (double u : {10.0, 30.0, 50.0}) s.utilization_percent.Add(u);
  for (double m : {1000.0, 2000.0, 3000.0}) s.memory_used_mb.Add(m);
  s.temperature_c.Add(40);  // fewer samples than utilization
  return s;                 // memory_usage_percent and power never read
}

GpuInfoRecord GpuInfo() {
  GpuInfoRecord info;
  info.count = 2;
  info.model = "NVIDIA H100 80GB HBM3";
  info.indices = {2, 3};
  info.allocation_method = "lease-ledger/availability-score";
  info.gpus = {{2, "GPU-a", "local", "NVIDIA H100 80GB HBM3", 81000, 81559, 12.5, 0.98},
               {3, "GPU-b", "local", "NVIDIA H100 80GB HBM3", 80000, 81559, std::nullopt, 0.5}};
  return info;
}

ExperimentRecord Experiment() {
  ExperimentRecord e;
  e.id = 7;
  e.task_id = 1;
  e.index = 0;
  e.status = ExperimentStatus::kSucceeded;
  e.parameters = {{"tp", int64_t{2}},
                  {"gpu-memory-utilization", 0.9},
                  {"enforce-eager", true},
                  {"kv-cache-dtype", std::string("fp8")}};
  e.gpus_required = 2;
  e.memory_mb_per_gpu = 19000;
  e.bench = Report();
  e.gpu_info = GpuInfo();
  e.gpu_monitoring = gpu::GpuStatsMap{{2, Stats()}};
  e.server_argv = {"gpuscale", "emulate"};
  e.queued_at = Seconds(100.5);
  e.started_at = Seconds(101);
  return e;
}

TEST(TaskJsonTest, BenchReportHasTheBenchCommandKeys) {
  const Json j = BenchReportJson(Report());
  EXPECT_THAT(Keys(j),
              ElementsAre("url", "model", "elapsed_seconds", "requests_sent", "requests_completed",
                          "requests_failed", "errors", "input_tokens_total", "output_tokens_total",
                          "request_throughput_per_second", "output_token_throughput_per_second",
                          "input_token_throughput_per_second", "ttft_seconds",
                          "inter_token_latency_seconds", "time_per_output_token_seconds",
                          "e2e_latency_seconds", "requests_queued", "queue_wait_max_seconds"));
  EXPECT_THAT(Keys(j["ttft_seconds"]),
              ElementsAre("p50", "p90", "p99", "mean", "min", "max", "count"));
  EXPECT_TRUE(j["inter_token_latency_seconds"]["p90"].is_null());
  EXPECT_EQ(j["ttft_seconds"]["p90"], 0.25);
}

TEST(TaskJsonTest, GpuStatsHaveTheMonitorCommandKeys) {
  const Json j = GpuStatsJson(Stats());
  EXPECT_THAT(Keys(j), ElementsAre("name", "utilization", "memory_used_mb", "memory_usage_percent",
                                   "temperature_c", "power_draw_w"));
  EXPECT_THAT(Keys(j["utilization"]), ElementsAre("min", "max", "mean", "samples"));
  EXPECT_THAT(Keys(j["memory_used_mb"]), ElementsAre("min", "max", "mean"));
  EXPECT_EQ(j["utilization"]["mean"], 30.0);
  EXPECT_TRUE(j["power_draw_w"]["mean"].is_null());
}

TEST(TaskJsonTest, ParametersRoundTripKeepingScalarTypes) {
  const std::map<std::string, ParamScalar> parameters = {
      {"int", int64_t{8}},          {"double", 0.9},
      {"whole-double", 2.0},        {"bool", false},
      {"string", std::string("8")}, {"negative", int64_t{-3}}};
  const std::string text = ExperimentParametersText(parameters);
  Result<std::map<std::string, ParamScalar>> back = ReadExperimentParameters(text, "parameters");
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, parameters);
  // The types survive: 2.0 stays a double, "8" a string.
  EXPECT_TRUE(std::holds_alternative<double>(back->at("whole-double")));
  EXPECT_TRUE(std::holds_alternative<std::string>(back->at("string")));
}

TEST(TaskJsonTest, BadParametersTextIsAnInternalErrorNamingTheColumn) {
  for (std::string_view text :
       {"not json", "[1,2]", R"({"a":[1]})", R"({"a":{"b":1}})", R"({"a":null})"}) {
    Result<std::map<std::string, ParamScalar>> back =
        ReadExperimentParameters(text, "experiments.parameters");
    ASSERT_FALSE(back.has_value()) << text;
    EXPECT_EQ(back.error().code, ErrorCode::kInternal);
    EXPECT_EQ(back.error().field, "experiments.parameters");
  }
}

TEST(TaskJsonTest, ResultsRoundTripWithEverything) {
  const ExperimentRecord e = Experiment();
  ExperimentRecord back;
  ASSERT_TRUE(ReadExperimentResults(ExperimentResultsText(e), "results", back).has_value());
  ASSERT_TRUE(back.bench.has_value());
  // Written again, the read-back record gives the same text: nothing was lost or changed.
  EXPECT_EQ(ExperimentResultsText(back), ExperimentResultsText(e));
  EXPECT_EQ(back.bench->errors_by_kind, e.bench->errors_by_kind);
  EXPECT_EQ(back.bench->ttft_seconds.p99, 0.375);
  EXPECT_EQ(back.bench->requests_queued, 3);
  EXPECT_EQ(back.bench->queue_wait_max_seconds, 0.5);
  EXPECT_EQ(back.bench->inter_token_latency_seconds.count, 0);
  ASSERT_TRUE(back.gpu_info.has_value());
  EXPECT_EQ(back.gpu_info->indices, (std::vector<int>{2, 3}));
  EXPECT_EQ(back.gpu_info->gpus[0].utilization_percent, 12.5);
  EXPECT_EQ(back.gpu_info->gpus[1].utilization_percent, std::nullopt);
  EXPECT_EQ(back.gpu_info->gpus[1].uuid, "GPU-b");
  ASSERT_TRUE(back.gpu_monitoring.has_value());
  const gpu::GpuStats& s = back.gpu_monitoring->at(2);
  EXPECT_EQ(s.utilization_percent.samples, 3);
  EXPECT_DOUBLE_EQ(*s.utilization_percent.Mean(), 30);
  EXPECT_DOUBLE_EQ(*s.memory_used_mb.Mean(), 2000);
  EXPECT_EQ(s.memory_used_mb.max, 3000);
  EXPECT_EQ(s.power_draw_w.samples, 0);
}

TEST(TaskJsonTest, AReportStoredBeforeQueueingWasMeasuredReadsAsNoneQueued) {
  const ExperimentRecord e = Experiment();
  nlohmann::json stored = nlohmann::json::parse(ExperimentResultsText(e));
  stored["bench"].erase("requests_queued");
  stored["bench"].erase("queue_wait_max_seconds");
  ExperimentRecord back;
  ASSERT_TRUE(ReadExperimentResults(stored.dump(), "results", back).has_value());
  ASSERT_TRUE(back.bench.has_value());
  EXPECT_EQ(back.bench->requests_queued, 0);
  EXPECT_EQ(back.bench->queue_wait_max_seconds, 0);
  EXPECT_EQ(back.bench->requests_completed, 10);
}

TEST(TaskJsonTest, ResultsRoundTripWithNothingSet) {
  ExperimentRecord e;
  const std::string text = ExperimentResultsText(e);
  EXPECT_EQ(text, R"({"bench":null,"gpu_info":null,"gpu_monitoring":null})");
  ExperimentRecord back = Experiment();  // fields get cleared
  ASSERT_TRUE(ReadExperimentResults(text, "results", back).has_value());
  EXPECT_FALSE(back.bench.has_value());
  EXPECT_FALSE(back.gpu_info.has_value());
  EXPECT_FALSE(back.gpu_monitoring.has_value());
}

TEST(TaskJsonTest, BadResultsTextIsAnInternalError) {
  for (std::string_view text :
       {"", "{}", R"({"bench":{"url":1},"gpu_info":null,"gpu_monitoring":null})",
        R"({"bench":null,"gpu_info":null,"gpu_monitoring":{"x":{}}})"}) {
    ExperimentRecord into;
    Status status = ReadExperimentResults(text, "experiments.results", into);
    ASSERT_FALSE(status.has_value()) << text;
    EXPECT_EQ(status.error().code, ErrorCode::kInternal);
    EXPECT_EQ(status.error().field, "experiments.results");
  }
}

TEST(TaskJsonTest, ExperimentViewKeys) {
  const ExperimentRecord e = Experiment();
  const Json j = ExperimentJson(e, 7);
  EXPECT_THAT(Keys(j),
              ElementsAre("id", "task_id", "index", "status", "parameters", "gpus_required",
                          "memory_mb_per_gpu", "is_best", "gpu_info", "gpu_monitoring", "bench",
                          "server_argv", "pid", "port", "log_path", "message", "queued_at",
                          "started_at", "finished_at"));
  EXPECT_EQ(j["status"], "succeeded");
  EXPECT_EQ(j["is_best"], true);
  EXPECT_FALSE(ExperimentJson(e, 8)["is_best"].get<bool>());
  EXPECT_EQ(j["parameters"]["tp"], 2);
  EXPECT_TRUE(j["parameters"]["enforce-eager"].is_boolean());
  EXPECT_THAT(Keys(j["gpu_info"]),
              ElementsAre("count", "model", "indices", "allocation_method", "gpus"));
  EXPECT_THAT(Keys(j["gpu_info"]["gpus"][0]),
              ElementsAre("index", "uuid", "node", "name", "memory_free_mb", "memory_total_mb",
                          "utilization_percent", "score"));
  EXPECT_THAT(Keys(j["gpu_monitoring"]),
              ElementsAre("monitoring_duration_seconds", "samples", "gpus"));
  EXPECT_EQ(j["gpu_monitoring"]["samples"], 3);
  EXPECT_EQ(j["gpu_monitoring"]["gpus"]["2"], GpuStatsJson(Stats()));
  EXPECT_EQ(j["bench"], BenchReportJson(Report()));
  EXPECT_EQ(j["queued_at"], 100.5);
  EXPECT_TRUE(j["finished_at"].is_null());
}

TaskRecord Task() {
  TaskRecord t;
  t.id = 1;
  t.definition.name = "sweep";
  t.definition.spec.model = "meta-llama/Llama-3.1-8B-Instruct";
  t.definition.spec.parameters = {{"tp", alloc::ParamValue::List({int64_t{1}, int64_t{2}})},
                                  {"max-model-len", alloc::ParamValue::Scalar(int64_t{4096})}};
  t.definition.server_command = {"vllm", "serve", "{model}"};
  t.definition.objective.kind = ObjectiveKind::kMinLatency;
  t.definition.objective.throughput_floor_rps = 5;
  t.source_text = "name: sweep\n";
  t.status = TaskStatus::kRunning;
  t.experiments_total = 2;
  t.best_experiment_id = 7;
  t.created_at = Seconds(1763870000.5);
  return t;
}

TEST(TaskJsonTest, SummaryKeysAndObjective) {
  const Json j = TaskSummaryJson(Task());
  EXPECT_THAT(Keys(j), ElementsAre("id", "name", "model", "status", "priority", "experiments_total",
                                   "experiments_done", "experiments_failed", "experiments_running",
                                   "best_experiment_id", "objective", "message", "created_at",
                                   "finished_at"));
  EXPECT_EQ(j["status"], "running");
  EXPECT_EQ(j["best_experiment_id"], 7);
  EXPECT_EQ(j["created_at"], 1763870000.5);
  EXPECT_EQ(j["objective"]["kind"], "min_latency");
  EXPECT_EQ(j["objective"]["percentile"].dump(), "90");
  EXPECT_EQ(j["objective"]["description"], "min ttft p90 with >= 5 req/s");
}

TEST(TaskJsonTest, FullTaskCountsExperimentsAndListsThemByIndex) {
  ExperimentRecord running = Experiment();
  running.id = 8;
  running.index = 1;
  running.status = ExperimentStatus::kRunning;
  ExperimentRecord failed = Experiment();
  failed.id = 9;
  failed.index = 2;
  failed.status = ExperimentStatus::kFailed;
  const Json j = TaskJson(Task(), {failed, running, Experiment()});
  EXPECT_EQ(j["experiments_done"], 2);
  EXPECT_EQ(j["experiments_failed"], 1);
  EXPECT_EQ(j["experiments_running"], 1);
  EXPECT_EQ(j["source_text"], "name: sweep\n");
  EXPECT_EQ(j["parameters"].dump(), R"({"max-model-len":4096,"tp":[1,2]})");
  EXPECT_EQ(j["server_command"][2], "{model}");
  EXPECT_THAT(Keys(j["bench"]),
              ElementsAre("mode", "concurrency", "rate_per_second", "input_tokens", "output_tokens",
                          "duration_seconds", "seed"));
  EXPECT_EQ(j["bench"]["mode"], "closed_loop");
  EXPECT_EQ(j["gpu_wait_timeout_seconds"].dump(), "300");
  EXPECT_EQ(j["max_parallel"], 0);
  ASSERT_EQ(j["experiments"].size(), 3u);
  EXPECT_EQ(j["experiments"][0]["id"], 7);
  EXPECT_EQ(j["experiments"][0]["is_best"], true);
  EXPECT_EQ(j["experiments"][2]["id"], 9);
}

}  // namespace
}  // namespace gpuscale::task
