// Parsed Prometheus metrics as plain values: a MetricFamily (one `# TYPE` name) holds the
// samples that belong to it, e.g. a histogram family `x` holds `x_bucket{le=..}`, `x_sum` and
// `x_count`. Produced by ParsePrometheusText, consumed by the lookup helpers
// (metric_lookup.h) and by ExpositionWriter.
//
// Thread-safety: plain values, safe to copy between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscale::metrics {

// The types of text format 0.0.4. kUntyped is what a sample without a `# TYPE` line gets.
enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };

// "counter", "gauge", "histogram", "summary" or "untyped", as written in `# TYPE` lines.
std::string_view MetricTypeName(MetricType type);

struct Label {
  std::string name;
  std::string value;  // unescaped
  friend bool operator==(const Label&, const Label&) = default;
};

struct Sample {
  std::string name;           // full sample name, e.g. "vllm:e2e_request_latency_seconds_bucket"
  std::vector<Label> labels;  // in exposition order
  double value = 0;           // may be NaN or +-Inf
  std::optional<int64_t> timestamp_ms;  // milliseconds since the Unix epoch, when given

  // The value of label `name`, or nullptr when the sample has no such label.
  const std::string* FindLabel(std::string_view label_name) const;
};

struct MetricFamily {
  std::string name;  // the `# TYPE`/`# HELP` name, or the sample name when untyped
  std::string help;  // unescaped; empty when no `# HELP` line
  MetricType type = MetricType::kUntyped;
  std::vector<Sample> samples;
};

// Metric names: [a-zA-Z_:][a-zA-Z0-9_:]* (colons are how vLLM namespaces its metrics).
bool IsValidMetricName(std::string_view name);
// Label names: [a-zA-Z_][a-zA-Z0-9_]*.
bool IsValidLabelName(std::string_view name);

}  // namespace gpuscale::metrics
