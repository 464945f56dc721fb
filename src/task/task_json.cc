#include "task/task_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <variant>

#include "task/objective.h"

namespace gpuscale::task {
namespace {

// `gpuscale bench -o json` rounds to 1e-6 s, `gpuscale monitor -o json` to 1e-3; kept here
// so the CLI output stays what scripts already read.
double RoundBench(double value) { return std::round(value * 1e6) / 1e6; }
double RoundMonitor(double value) { return std::round(value * 1e3) / 1e3; }

Json TimeJson(std::optional<Seconds> t) { return t ? Json(t->count()) : Json(nullptr); }

// 90 prints as 90, not 90.0; anything fractional stays a double.
Json NumberJson(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::abs(value) < 1e15) {
    return Json(static_cast<int64_t>(value));
  }
  return Json(value);
}

Json SummaryJson(const loadgen::LatencySummary& s) {
  const auto value = [&](double v) { return s.count > 0 ? Json(RoundBench(v)) : Json(nullptr); };
  return Json{{"p50", value(s.p50)},   {"p90", value(s.p90)}, {"p99", value(s.p99)},
              {"mean", value(s.mean)}, {"min", value(s.min)}, {"max", value(s.max)},
              {"count", s.count}};
}

Json MetricJson(const gpu::MetricStats& stats, bool with_samples) {
  const bool seen = stats.samples > 0;
  Json result{{"min", seen ? Json(RoundMonitor(stats.min)) : Json(nullptr)},
              {"max", seen ? Json(RoundMonitor(stats.max)) : Json(nullptr)},
              {"mean", seen ? Json(RoundMonitor(*stats.Mean())) : Json(nullptr)}};
  if (with_samples) result["samples"] = stats.samples;
  return result;
}

std::string_view ObjectiveKindName(ObjectiveKind kind) {
  switch (kind) {
    case ObjectiveKind::kMinLatency:
      return "min_latency";
    case ObjectiveKind::kMaxThroughputUnderLatency:
      return "max_throughput_under_latency";
    default:
      return "max_throughput";
  }
}

Json GpuInfoJson(const GpuInfoRecord& info) {
  Json gpus = Json::array();
  for (const AllocatedGpu& g : info.gpus) {
    gpus.push_back(Json{{"index", g.index},
                        {"uuid", g.uuid},
                        {"node", g.node},
                        {"name", g.name},
                        {"memory_free_mb", g.memory_free_mb},
                        {"memory_total_mb", g.memory_total_mb},
                        {"utilization_percent",
                         g.utilization_percent ? Json(*g.utilization_percent) : Json(nullptr)},
                        {"score", g.score}});
  }
  return Json{{"count", info.count},
              {"model", info.model},
              {"indices", info.indices},
              {"allocation_method", info.allocation_method},
              {"gpus", std::move(gpus)}};
}

Json GpuStatsMapJson(const gpu::GpuStatsMap& stats) {
  Json gpus = Json::object();
  for (const auto& [index, s] : stats) gpus[std::to_string(index)] = GpuStatsJson(s);
  return gpus;
}

// The API's gpu_monitoring: the per-GPU stats plus the window they cover. The window is the
// benchmark's (monitoring runs while it does); samples is the most any GPU got.
Json MonitoringViewJson(const ExperimentRecord& e) {
  int64_t samples = 0;
  for (const auto& [index, s] : *e.gpu_monitoring) {
    samples = std::max(samples, s.utilization_percent.samples);
  }
  return Json{{"monitoring_duration_seconds",
               e.bench ? Json(RoundMonitor(e.bench->elapsed_seconds)) : Json(nullptr)},
              {"samples", samples},
              {"gpus", GpuStatsMapJson(*e.gpu_monitoring)}};
}

Json BenchSpecJson(const BenchSpec& b) {
  const bool poisson = b.mode == loadgen::ArrivalMode::kPoisson;
  return Json{{"mode", poisson ? "poisson" : "closed_loop"},
              {"concurrency", b.concurrency},
              {"rate_per_second", b.rate_per_second},
              {"input_tokens", b.input.mean_tokens},
              {"output_tokens", b.output.mean_tokens},
              {"duration_seconds", b.duration_seconds},
              {"seed", b.seed}};
}

Json GridJson(const std::map<std::string, alloc::ParamValue>& parameters) {
  Json out = Json::object();
  for (const auto& [name, value] : parameters) {
    if (!value.is_list && value.items.size() == 1) {
      out[name] = ParameterJson(value.items[0]);
      continue;
    }
    Json items = Json::array();
    for (const alloc::ParamScalar& item : value.items) items.push_back(ParameterJson(item));
    out[name] = std::move(items);
  }
  return out;
}

}  // namespace

Json BenchReportJson(const loadgen::BenchReport& r) {
  return Json{
      {"url", r.url},
      {"model", r.model},
      {"elapsed_seconds", RoundBench(r.elapsed_seconds)},
      {"requests_sent", r.requests_sent},
      {"requests_completed", r.requests_completed},
      {"requests_failed", r.requests_failed},
      {"errors", Json(r.errors_by_kind)},
      {"input_tokens_total", r.input_tokens_total},
      {"output_tokens_total", r.output_tokens_total},
      {"request_throughput_per_second", RoundBench(r.request_throughput_per_second)},
      {"output_token_throughput_per_second", RoundBench(r.output_token_throughput_per_second)},
      {"input_token_throughput_per_second", RoundBench(r.input_token_throughput_per_second)},
      {"ttft_seconds", SummaryJson(r.ttft_seconds)},
      {"inter_token_latency_seconds", SummaryJson(r.inter_token_latency_seconds)},
      {"time_per_output_token_seconds", SummaryJson(r.time_per_output_token_seconds)},
      {"e2e_latency_seconds", SummaryJson(r.e2e_latency_seconds)},
      {"requests_queued", r.requests_queued},
      {"queue_wait_max_seconds", RoundBench(r.queue_wait_max_seconds)}};
}

Json GpuStatsJson(const gpu::GpuStats& stats) {
  return Json{{"name", stats.name},
              {"utilization", MetricJson(stats.utilization_percent, /*with_samples=*/true)},
              {"memory_used_mb", MetricJson(stats.memory_used_mb, false)},
              {"memory_usage_percent", MetricJson(stats.memory_usage_percent, false)},
              {"temperature_c", MetricJson(stats.temperature_c, false)},
              {"power_draw_w", MetricJson(stats.power_draw_w, false)}};
}

Json ParameterJson(const alloc::ParamScalar& value) {
  return std::visit([](const auto& v) { return Json(v); }, value);
}

Json ParametersJson(const std::map<std::string, alloc::ParamScalar>& parameters) {
  Json out = Json::object();
  for (const auto& [name, value] : parameters) out[name] = ParameterJson(value);
  return out;
}

Json ObjectiveJson(const Objective& objective) {
  return Json{{"kind", ObjectiveKindName(objective.kind)},
              {"latency_metric", objective.latency_metric},
              {"percentile", NumberJson(objective.percentile)},
              {"throughput_floor_rps", NumberJson(objective.throughput_floor_rps)},
              {"latency_ceiling_seconds", NumberJson(objective.latency_ceiling_seconds)},
              {"description", DescribeObjective(objective)}};
}

Json ExperimentJson(const ExperimentRecord& e, std::optional<int64_t> best_id) {
  return Json{{"id", e.id},
              {"task_id", e.task_id},
              {"index", e.index},
              {"status", ExperimentStatusName(e.status)},
              {"parameters", ParametersJson(e.parameters)},
              {"gpus_required", e.gpus_required},
              {"memory_mb_per_gpu", e.memory_mb_per_gpu},
              {"is_best", best_id.has_value() && *best_id == e.id},
              {"gpu_info", e.gpu_info ? GpuInfoJson(*e.gpu_info) : Json(nullptr)},
              {"gpu_monitoring", e.gpu_monitoring ? MonitoringViewJson(e) : Json(nullptr)},
              {"bench", e.bench ? BenchReportJson(*e.bench) : Json(nullptr)},
              {"server_argv", e.server_argv},
              {"pid", e.pid},
              {"port", e.port},
              {"log_path", e.log_path},
              {"message", e.message},
              {"queued_at", e.queued_at.count()},
              {"started_at", TimeJson(e.started_at)},
              {"finished_at", TimeJson(e.finished_at)}};
}

Json TaskSummaryJson(const TaskRecord& task) {
  return Json{{"id", task.id},
              {"name", task.definition.name},
              {"model", task.definition.spec.model},
              {"status", TaskStatusName(task.status)},
              {"priority", task.definition.priority},
              {"experiments_total", task.experiments_total},
              {"experiments_done", task.experiments_done},
              {"experiments_failed", nullptr},
              {"experiments_running", nullptr},
              {"best_experiment_id",
               task.best_experiment_id ? Json(*task.best_experiment_id) : Json(nullptr)},
              {"objective", ObjectiveJson(task.definition.objective)},
              {"message", task.message},
              {"created_at", task.created_at.count()},
              {"finished_at", TimeJson(task.finished_at)}};
}

Json TaskSummaryJson(const TaskRecord& task, const std::vector<ExperimentRecord>& experiments) {
  Json out = TaskSummaryJson(task);
  int done = 0;
  int failed = 0;
  int running = 0;
  for (const ExperimentRecord& e : experiments) {
    done += IsTerminal(e.status) ? 1 : 0;
    failed += e.status == ExperimentStatus::kFailed ? 1 : 0;
    running +=
        (e.status == ExperimentStatus::kStarting || e.status == ExperimentStatus::kRunning) ? 1 : 0;
  }
  out["experiments_done"] = done;
  out["experiments_failed"] = failed;
  out["experiments_running"] = running;
  return out;
}

Json TaskJson(const TaskRecord& task, const std::vector<ExperimentRecord>& experiments) {
  const TaskDefinition& d = task.definition;
  Json out = TaskSummaryJson(task, experiments);
  out["source_text"] = task.source_text;
  out["parameters"] = GridJson(d.spec.parameters);
  out["server_command"] = d.server_command;
  Json env = Json::object();
  for (const auto& [key, value] : d.env) env[key] = value;
  out["server_env"] = std::move(env);
  out["readiness_path"] = d.readiness_path;
  out["startup_timeout_seconds"] = NumberJson(d.startup_timeout.count());
  out["bench"] = BenchSpecJson(d.bench);
  out["gpu_wait_timeout_seconds"] = NumberJson(d.gpu_wait_timeout.count());
  out["max_parallel"] = d.max_parallel;
  std::vector<const ExperimentRecord*> ordered;
  for (const ExperimentRecord& e : experiments) ordered.push_back(&e);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto* a, const auto* b) { return a->index < b->index; });
  Json list = Json::array();
  for (const ExperimentRecord* e : ordered)
    list.push_back(ExperimentJson(*e, task.best_experiment_id));
  out["experiments"] = std::move(list);
  return out;
}

std::string ExperimentParametersText(const std::map<std::string, alloc::ParamScalar>& parameters) {
  return ParametersJson(parameters).dump();
}

std::string ExperimentResultsText(const ExperimentRecord& e) {
  Json out{
      {"bench", e.bench ? BenchReportJson(*e.bench) : Json(nullptr)},
      {"gpu_info", e.gpu_info ? GpuInfoJson(*e.gpu_info) : Json(nullptr)},
      {"gpu_monitoring", e.gpu_monitoring ? GpuStatsMapJson(*e.gpu_monitoring) : Json(nullptr)}};
  return out.dump();
}

}  // namespace gpuscale::task
