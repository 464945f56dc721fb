#include "emulator/vllm_metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "metrics/exposition_writer.h"

namespace gpuscale::emulator {
namespace {

using metrics::Label;
using metrics::MetricType;

// Python's repr of a float for bucket bounds: shortest round-trip text, with ".0" on
// integral values ("1.0", "7680.0", "0.001").
std::string PythonFloat(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

// Writes `_bucket`, `_sum` and `_count` by hand (rather than AddHistogram) to control the
// `le` text; `le` goes first, as prometheus_client writes it.
void AddHistogram(metrics::ExpositionWriter& writer, std::string_view name,
                  const metrics::BucketHistogram& histogram, const std::vector<Label>& labels) {
  const std::string bucket_name = fmt::format("{}_bucket", name);
  const std::vector<double> cumulative = histogram.CumulativeCounts();
  std::vector<Label> bucket_labels;
  bucket_labels.push_back({"le", ""});
  bucket_labels.insert(bucket_labels.end(), labels.begin(), labels.end());
  for (size_t i = 0; i < cumulative.size(); ++i) {
    bucket_labels[0].value = PythonFloat(histogram.upper_bounds()[i]);
    writer.AddSample(bucket_name, bucket_labels, cumulative[i]);
  }
  bucket_labels[0].value = "+Inf";
  const double count = static_cast<double>(histogram.count());
  writer.AddSample(bucket_name, bucket_labels, count);
  writer.AddSample(fmt::format("{}_count", name), labels, count);
  writer.AddSample(fmt::format("{}_sum", name), labels, histogram.sum());
}

}  // namespace

std::string RenderVllmMetrics(const EngineStats& stats, std::string_view model_name) {
  const std::vector<Label> labels{{"model_name", std::string(model_name)}};
  metrics::ExpositionWriter w;
  w.BeginFamily("vllm:num_requests_running", MetricType::kGauge,
                "Number of requests currently running on GPU.");
  w.AddValue(labels, stats.running);
  w.BeginFamily("vllm:num_requests_waiting", MetricType::kGauge,
                "Number of requests waiting to be processed.");
  w.AddValue(labels, stats.waiting);
  w.BeginFamily("vllm:gpu_cache_usage_perc", MetricType::kGauge,
                "GPU KV-cache usage. 1 means 100 percent usage.");
  w.AddValue(labels, stats.KvUsageRatio());
  w.BeginFamily("vllm:prompt_tokens_total", MetricType::kCounter,
                "Number of prefill tokens processed.");
  w.AddValue(labels, static_cast<double>(stats.prompt_tokens_total));
  w.BeginFamily("vllm:generation_tokens_total", MetricType::kCounter,
                "Number of generation tokens processed.");
  w.AddValue(labels, static_cast<double>(stats.generation_tokens_total));
  w.BeginFamily("vllm:request_success_total", MetricType::kCounter,
                "Count of successfully processed requests.");
  std::vector<Label> success_labels{{"finished_reason", "length"}};
  success_labels.insert(success_labels.end(), labels.begin(), labels.end());
  w.AddValue(success_labels, static_cast<double>(stats.requests_finished_total));
  w.BeginFamily("vllm:time_to_first_token_seconds", MetricType::kHistogram,
                "Histogram of time to first token in seconds.");
  AddHistogram(w, "vllm:time_to_first_token_seconds", stats.ttft_seconds, labels);
  w.BeginFamily("vllm:e2e_request_latency_seconds", MetricType::kHistogram,
                "Histogram of end to end request latency in seconds.");
  AddHistogram(w, "vllm:e2e_request_latency_seconds", stats.e2e_seconds, labels);
  return w.Take();
}

}  // namespace gpuscale::emulator
