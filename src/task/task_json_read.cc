// Readers of the store's JSON text columns (task_json.h): the inverse of
// ExperimentParametersText and ExperimentResultsText. Values the writers round (bench
// figures to 1e-6, GPU stats to 1e-3) come back rounded.
#include <fmt/format.h>

#include <cmath>

#include "task/task_json.h"

namespace gpuscale::task {
namespace {

Unexpected<Error> ColumnError(std::string_view column, std::string_view what) {
  return Internal(fmt::format("stored column {} is not valid: {}", column, what),
                  std::string(column));
}

// A number that is null when its summary had no sample.
double NumberOr0(const Json& value) { return value.is_null() ? 0.0 : value.get<double>(); }

loadgen::LatencySummary ReadSummary(const Json& j) {
  loadgen::LatencySummary s;
  s.count = j.at("count").get<int64_t>();
  s.p50 = NumberOr0(j.at("p50"));
  s.p90 = NumberOr0(j.at("p90"));
  s.p99 = NumberOr0(j.at("p99"));
  s.mean = NumberOr0(j.at("mean"));
  s.min = NumberOr0(j.at("min"));
  s.max = NumberOr0(j.at("max"));
  return s;
}

loadgen::BenchReport ReadBench(const Json& j) {
  loadgen::BenchReport r;
  r.url = j.at("url").get<std::string>();
  r.model = j.at("model").get<std::string>();
  r.elapsed_seconds = j.at("elapsed_seconds").get<double>();
  r.requests_sent = j.at("requests_sent").get<int64_t>();
  r.requests_completed = j.at("requests_completed").get<int64_t>();
  r.requests_failed = j.at("requests_failed").get<int64_t>();
  r.errors_by_kind = j.at("errors").get<std::map<std::string, int64_t>>();
  r.input_tokens_total = j.at("input_tokens_total").get<int64_t>();
  r.output_tokens_total = j.at("output_tokens_total").get<int64_t>();
  r.request_throughput_per_second = j.at("request_throughput_per_second").get<double>();
  r.output_token_throughput_per_second = j.at("output_token_throughput_per_second").get<double>();
  r.input_token_throughput_per_second = j.at("input_token_throughput_per_second").get<double>();
  r.ttft_seconds = ReadSummary(j.at("ttft_seconds"));
  r.inter_token_latency_seconds = ReadSummary(j.at("inter_token_latency_seconds"));
  r.time_per_output_token_seconds = ReadSummary(j.at("time_per_output_token_seconds"));
  r.e2e_latency_seconds = ReadSummary(j.at("e2e_latency_seconds"));
  // Absent from reports stored before they were measured.
  r.requests_queued = j.value("requests_queued", int64_t{0});
  r.queue_wait_max_seconds = j.value("queue_wait_max_seconds", 0.0);
  return r;
}

GpuInfoRecord ReadGpuInfo(const Json& j) {
  GpuInfoRecord info;
  info.count = j.at("count").get<int>();
  info.model = j.at("model").get<std::string>();
  info.indices = j.at("indices").get<std::vector<int>>();
  info.allocation_method = j.at("allocation_method").get<std::string>();
  for (const Json& g : j.at("gpus")) {
    AllocatedGpu gpu;
    gpu.index = g.at("index").get<int>();
    gpu.uuid = g.at("uuid").get<std::string>();
    gpu.node = g.at("node").get<std::string>();
    gpu.name = g.at("name").get<std::string>();
    gpu.memory_free_mb = g.at("memory_free_mb").get<int64_t>();
    gpu.memory_total_mb = g.at("memory_total_mb").get<int64_t>();
    const Json& utilization = g.at("utilization_percent");
    if (!utilization.is_null()) gpu.utilization_percent = utilization.get<double>();
    gpu.score = g.at("score").get<double>();
    info.gpus.push_back(std::move(gpu));
  }
  return info;
}

// Only utilization carries its sample count in the monitor's JSON; the other metrics of a
// GPU are read as having that many samples (sum = mean x samples), or none when null.
gpu::MetricStats ReadMetric(const Json& j, int64_t samples_if_absent) {
  gpu::MetricStats m;
  if (j.at("mean").is_null()) return m;
  m.samples = j.contains("samples") ? j.at("samples").get<int64_t>()
                                    : std::max<int64_t>(1, samples_if_absent);
  m.min = j.at("min").get<double>();
  m.max = j.at("max").get<double>();
  m.sum = j.at("mean").get<double>() * static_cast<double>(m.samples);
  return m;
}

gpu::GpuStatsMap ReadMonitoring(const Json& j) {
  gpu::GpuStatsMap stats;
  for (const auto& [key, value] : j.items()) {
    gpu::GpuStats s;
    s.name = value.at("name").get<std::string>();
    s.utilization_percent = ReadMetric(value.at("utilization"), 0);
    const int64_t n = s.utilization_percent.samples;
    s.memory_used_mb = ReadMetric(value.at("memory_used_mb"), n);
    s.memory_usage_percent = ReadMetric(value.at("memory_usage_percent"), n);
    s.temperature_c = ReadMetric(value.at("temperature_c"), n);
    s.power_draw_w = ReadMetric(value.at("power_draw_w"), n);
    stats[std::stoi(key)] = std::move(s);
  }
  return stats;
}

Result<alloc::ParamScalar> ReadScalar(const Json& value, std::string_view column,
                                      const std::string& name) {
  if (value.is_boolean()) return alloc::ParamScalar(value.get<bool>());
  if (value.is_number_integer()) return alloc::ParamScalar(value.get<int64_t>());
  if (value.is_number_float()) return alloc::ParamScalar(value.get<double>());
  if (value.is_string()) return alloc::ParamScalar(value.get<std::string>());
  return ColumnError(column, fmt::format("parameter '{}' is not a scalar", name));
}

}  // namespace

Result<std::map<std::string, alloc::ParamScalar>> ReadExperimentParameters(
    std::string_view text, std::string_view column) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return ColumnError(column, "expected a JSON object");
  std::map<std::string, alloc::ParamScalar> parameters;
  for (const auto& [name, value] : j.items()) {
    GS_ASSIGN_OR_RETURN(parameters[name], ReadScalar(value, column, name));
  }
  return parameters;
}

Status ReadExperimentResults(std::string_view text, std::string_view column,
                             ExperimentRecord& into) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return ColumnError(column, "expected a JSON object");
  // Missing keys and wrong types throw from at()/get(); no exception leaves this function.
  try {
    const Json& bench = j.at("bench");
    const Json& gpu_info = j.at("gpu_info");
    const Json& monitoring = j.at("gpu_monitoring");
    into.bench = bench.is_null() ? std::nullopt : std::optional(ReadBench(bench));
    into.gpu_info = gpu_info.is_null() ? std::nullopt : std::optional(ReadGpuInfo(gpu_info));
    into.gpu_monitoring =
        monitoring.is_null() ? std::nullopt : std::optional(ReadMonitoring(monitoring));
  } catch (const Json::exception& e) {
    return ColumnError(column, e.what());
  } catch (const std::exception& e) {  // std::stoi on a GPU key that is not a number
    return ColumnError(column, e.what());
  }
  return OkStatus();
}

}  // namespace gpuscale::task
