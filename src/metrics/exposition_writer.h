// Writes the Prometheus text exposition format 0.0.4: gpuscale's own /metrics and the replica
// emulator's vLLM-style /metrics. Output parses back with ParsePrometheusText (round-trip
// tested). Values use the shortest text that reads back to the same double; NaN and
// infinities are written as NaN, +Inf, -Inf.
//
// Usage:
//   ExpositionWriter w;
//   w.BeginFamily("vllm:num_requests_running", MetricType::kGauge, "Requests running.");
//   w.AddValue({{"model_name", "llama"}}, 3);
//   w.BeginFamily("vllm:e2e_request_latency_seconds", MetricType::kHistogram, "E2E latency.");
//   w.AddHistogram({{"model_name", "llama"}}, bounds, cumulative_counts, sum);
//   std::string body = w.Take();
//
// Ownership and thread-safety: owns its text buffer; not synchronised (one writer per
// scrape response).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "metrics/metric_family.h"

namespace gpuscale::metrics {

class ExpositionWriter {
 public:
  // Writes `# HELP` (when help is non-empty, escaped) and `# TYPE`, and makes `name` the
  // current family. A counter's `name` is its sample name, `_total` included: format 0.0.4
  // (unlike OpenMetrics) types the sample name, and Prometheus leaves samples that no TYPE
  // line names untyped and without help.
  // REQUIRES: IsValidMetricName(name); each family begun once per exposition.
  void BeginFamily(std::string_view name, MetricType type, std::string_view help = {});

  // One sample line; label values are escaped. REQUIRES: valid sample and label names.
  void AddSample(std::string_view name, std::span<const Label> labels, double value,
                 std::optional<int64_t> timestamp_ms = std::nullopt);
  // A sample named as the current family (gauge, counter, untyped).
  // REQUIRES: BeginFamily was called.
  void AddValue(std::span<const Label> labels, double value);
  // The series of the current histogram family: one `_bucket{le}` line per bound (a +Inf
  // bucket equal to the last count is added when the bounds lack it), then `_sum`, `_count`.
  // REQUIRES: BeginFamily was called; bounds ascending; cumulative_counts same length.
  void AddHistogram(std::span<const Label> labels, std::span<const double> upper_bounds,
                    std::span<const double> cumulative_counts, double sum);
  // A whole parsed family: header lines, then its samples as they are.
  void AddFamily(const MetricFamily& family);

  const std::string& text() const { return text_; }
  // Returns the text and leaves the writer empty.
  std::string Take();

 private:
  void AppendLabels(std::span<const Label> labels, const Label* extra);

  std::string text_;
  std::string family_;  // name of the current family
};

// Convenience: all families, in order.
std::string WritePrometheusText(std::span<const MetricFamily> families);

}  // namespace gpuscale::metrics
