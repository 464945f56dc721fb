#include "emulator/vllm_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "metrics/exposition_writer.h"
#include "metrics/vllm_metric_names.h"

namespace gpuscale::emulator {
namespace {

using metrics::Label;
using metrics::MetricType;
namespace vllm = metrics::vllm;

// The engine core's index: one engine per emulated replica (vLLM without data parallelism).
constexpr std::string_view kEngine = "0";

// Python's repr of a float for bucket bounds: shortest round-trip text, with ".0" on
// integral values ("1.0", "7680.0", "0.001").
std::string PythonFloat(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

// prometheus_client writes a sample's labels sorted by name (engine, finished_reason, le,
// model_name), which dashboards' copied selectors do not care about but diffs against a
// real vLLM scrape do.
std::vector<Label> Sorted(std::vector<Label> labels) {
  std::sort(labels.begin(), labels.end(),
            [](const Label& a, const Label& b) { return a.name < b.name; });
  return labels;
}

// Writes `_bucket`, `_count` and `_sum` by hand (rather than AddHistogram) to control the
// `le` text and the label order.
void AddHistogram(metrics::ExpositionWriter& writer, std::string_view name,
                  const metrics::BucketHistogram& histogram, const std::vector<Label>& labels) {
  const std::string bucket_name = fmt::format("{}_bucket", name);
  const std::vector<double> cumulative = histogram.CumulativeCounts();
  std::vector<Label> bucket_labels = labels;
  bucket_labels.push_back({"le", ""});
  bucket_labels = Sorted(std::move(bucket_labels));
  Label& le = *std::find_if(bucket_labels.begin(), bucket_labels.end(),
                            [](const Label& l) { return l.name == "le"; });
  for (size_t i = 0; i < cumulative.size(); ++i) {
    le.value = PythonFloat(histogram.upper_bounds()[i]);
    writer.AddSample(bucket_name, bucket_labels, cumulative[i]);
  }
  le.value = "+Inf";
  const double count = static_cast<double>(histogram.count());
  writer.AddSample(bucket_name, bucket_labels, count);
  writer.AddSample(fmt::format("{}_count", name), labels, count);
  writer.AddSample(fmt::format("{}_sum", name), labels, histogram.sum());
}

struct Gauge {
  std::string_view name;
  std::string_view help;
  double (*read)(const EngineStats&);
};

double KvUsage(const EngineStats& s) { return s.KvUsageRatio(); }

constexpr Gauge kGauges[] = {
    {vllm::kNumRequestsRunning, "Requests in the batch being executed.",
     [](const EngineStats& s) { return static_cast<double>(s.running); }},
    {vllm::kNumRequestsWaiting, "Requests waiting to be scheduled.",
     [](const EngineStats& s) { return static_cast<double>(s.waiting); }},
    {vllm::kKvCacheUsagePerc, "Share of the KV cache in use (1 = full).", KvUsage},
    // vLLM stopped serving this name; kept for dashboards written against older vLLM.
    {vllm::kGpuCacheUsagePercFormer,
     "Share of the KV cache in use (1 = full). Former name of vllm:kv_cache_usage_perc.", KvUsage},
};

struct Counter {
  std::string_view name;
  std::string_view help;
  int64_t EngineStats::*value;
};

constexpr Counter kCounters[] = {
    {vllm::kNumPreemptionsTotal, "Requests preempted by the engine.",
     &EngineStats::preemptions_total},
    {vllm::kPromptTokensTotal, "Prompt (prefill) tokens processed.",
     &EngineStats::prompt_tokens_total},
    {vllm::kGenerationTokensTotal, "Output tokens generated.",
     &EngineStats::generation_tokens_total},
    {vllm::kPrefixCacheQueriesTotal, "Prompt tokens looked up in the prefix cache.",
     &EngineStats::prefix_cache_queries_total},
    {vllm::kPrefixCacheHitsTotal, "Prompt tokens found in the prefix cache.",
     &EngineStats::prefix_cache_hits_total},
};

struct Histogram {
  std::string_view name;
  std::string_view help;
  metrics::BucketHistogram EngineStats::*histogram;
};

constexpr Histogram kHistograms[] = {
    {vllm::kTimeToFirstTokenSeconds, "Request arrival to its first output token, seconds.",
     &EngineStats::ttft_seconds},
    {vllm::kInterTokenLatencySeconds, "Gaps between successive output tokens, seconds.",
     &EngineStats::inter_token_seconds},
    {vllm::kRequestTimePerOutputTokenSeconds,
     "Per finished request: mean gap between its output tokens, seconds.",
     &EngineStats::request_tpot_seconds},
    {vllm::kE2eRequestLatencySeconds, "Request arrival to its last output token, seconds.",
     &EngineStats::e2e_seconds},
    {vllm::kRequestQueueTimeSeconds, "Time requests waited before being scheduled, seconds.",
     &EngineStats::queue_seconds},
    {vllm::kRequestInferenceTimeSeconds, "Scheduled to last output token, seconds.",
     &EngineStats::inference_seconds},
    {vllm::kRequestPrefillTimeSeconds, "Scheduled to first output token, seconds.",
     &EngineStats::prefill_seconds},
    {vllm::kRequestDecodeTimeSeconds, "First to last output token, seconds.",
     &EngineStats::decode_seconds},
    {vllm::kRequestPromptTokens, "Prompt tokens per finished request.",
     &EngineStats::prompt_tokens},
    {vllm::kRequestGenerationTokens, "Output tokens per finished request.",
     &EngineStats::generation_tokens},
};

// vLLM creates every finish reason's series up front, so all appear from the first scrape.
// Cancelled requests are not counted (vLLM's "abort" counts aborts in the engine).
void AddRequestSuccess(metrics::ExpositionWriter& w, const EngineStats& stats,
                       const std::vector<Label>& labels) {
  w.BeginFamily(vllm::kRequestSuccessTotal, MetricType::kCounter, "Finished requests by reason.");
  for (std::string_view reason : {"stop", "length", "abort"}) {
    std::vector<Label> with_reason = labels;
    with_reason.push_back({"finished_reason", std::string(reason)});
    const int64_t n =
        reason == "stop"     ? stats.requests_stopped_total
        : reason == "length" ? stats.requests_finished_total - stats.requests_stopped_total
                             : 0;
    w.AddValue(Sorted(std::move(with_reason)), static_cast<double>(n));
  }
}

}  // namespace

std::string RenderVllmMetrics(const EngineStats& stats, std::string_view model_name,
                              const std::optional<EmulatedGpu>& gpu) {
  const std::vector<Label> labels =
      Sorted({{"model_name", std::string(model_name)}, {"engine", std::string(kEngine)}});
  metrics::ExpositionWriter w;
  for (const Gauge& g : kGauges) {
    w.BeginFamily(g.name, MetricType::kGauge, g.help);
    w.AddValue(labels, g.read(stats));
  }
  for (const Counter& c : kCounters) {
    w.BeginFamily(c.name, MetricType::kCounter, c.help);
    w.AddValue(labels, static_cast<double>(stats.*c.value));
  }
  AddRequestSuccess(w, stats, labels);
  for (const Histogram& h : kHistograms) {
    w.BeginFamily(h.name, MetricType::kHistogram, h.help);
    AddHistogram(w, h.name, stats.*h.histogram, labels);
  }
  if (gpu) {
    w.BeginFamily(metrics::emulated::kGpuUtilizationRatio, MetricType::kGauge,
                  "Emulated GPU utilization: running sequences / max_num_seqs.");
    w.AddValue(labels, gpu->utilization_ratio);
    w.BeginFamily(metrics::emulated::kGpuMemoryUsedBytes, MetricType::kGauge,
                  "Emulated bytes held on each of the replica's GPUs (weights + KV cache).");
    w.AddValue(labels, static_cast<double>(gpu->memory_used_bytes));
  }
  return w.Take();
}

}  // namespace gpuscale::emulator
