#include "metrics/exposition_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <utility>

namespace gpuscale::metrics {
namespace {

// fmt's "{}" is the shortest text that round-trips (Ryu-like), e.g. "0.5", "3", "1e-07".
void AppendValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

std::string FormatValue(double value) {
  std::string out;
  AppendValue(out, value);
  return out;
}

// Label values escape \\, \" and newline; HELP text escapes \\ and newline.
void AppendEscaped(std::string& out, std::string_view text, bool escape_quotes) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

}  // namespace

void ExpositionWriter::BeginFamily(std::string_view name, MetricType type, std::string_view help) {
  family_ = name;
  if (!help.empty()) {
    text_ += "# HELP ";
    text_ += name;
    text_ += ' ';
    AppendEscaped(text_, help, /*escape_quotes=*/false);
    text_ += '\n';
  }
  fmt::format_to(std::back_inserter(text_), "# TYPE {} {}\n", name, MetricTypeName(type));
}

void ExpositionWriter::AppendLabels(std::span<const Label> labels, const Label* extra) {
  if (labels.empty() && extra == nullptr) return;
  text_ += '{';
  bool first = true;
  auto append = [&](const Label& label) {
    if (!first) text_ += ',';
    first = false;
    text_ += label.name;
    text_ += "=\"";
    AppendEscaped(text_, label.value, /*escape_quotes=*/true);
    text_ += '"';
  };
  for (const Label& label : labels) append(label);
  if (extra != nullptr) append(*extra);
  text_ += '}';
}

void ExpositionWriter::AddSample(std::string_view name, std::span<const Label> labels, double value,
                                 std::optional<int64_t> timestamp_ms) {
  text_ += name;
  AppendLabels(labels, nullptr);
  text_ += ' ';
  AppendValue(text_, value);
  if (timestamp_ms) fmt::format_to(std::back_inserter(text_), " {}", *timestamp_ms);
  text_ += '\n';
}

void ExpositionWriter::AddValue(std::span<const Label> labels, double value) {
  AddSample(family_, labels, value);
}

void ExpositionWriter::AddHistogram(std::span<const Label> labels,
                                    std::span<const double> upper_bounds,
                                    std::span<const double> cumulative_counts, double sum) {
  const std::string bucket = family_ + "_bucket";
  Label le{"le", ""};
  for (size_t i = 0; i < upper_bounds.size() && i < cumulative_counts.size(); ++i) {
    le.value = FormatValue(upper_bounds[i]);
    text_ += bucket;
    AppendLabels(labels, &le);
    text_ += ' ';
    AppendValue(text_, cumulative_counts[i]);
    text_ += '\n';
  }
  const double count = cumulative_counts.empty() ? 0.0 : cumulative_counts.back();
  if (upper_bounds.empty() || !std::isinf(upper_bounds.back())) {
    le.value = "+Inf";
    text_ += bucket;
    AppendLabels(labels, &le);
    text_ += ' ';
    AppendValue(text_, count);
    text_ += '\n';
  }
  AddSample(family_ + "_sum", labels, sum);
  AddSample(family_ + "_count", labels, count);
}

void ExpositionWriter::AddFamily(const MetricFamily& family) {
  BeginFamily(family.name, family.type, family.help);
  for (const Sample& sample : family.samples) {
    AddSample(sample.name, sample.labels, sample.value, sample.timestamp_ms);
  }
}

std::string ExpositionWriter::Take() {
  family_.clear();
  return std::exchange(text_, std::string());
}

std::string WritePrometheusText(std::span<const MetricFamily> families) {
  ExpositionWriter writer;
  for (const MetricFamily& family : families) writer.AddFamily(family);
  return writer.Take();
}

}  // namespace gpuscale::metrics
