#include "metrics/metric_family.h"

namespace gpuscale::metrics {
namespace {

bool IsAsciiLetterOrUnderscore(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kUntyped:
      break;
  }
  return "untyped";
}

const std::string* Sample::FindLabel(std::string_view label_name) const {
  for (const Label& label : labels) {
    if (label.name == label_name) return &label.value;
  }
  return nullptr;
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  if (!IsAsciiLetterOrUnderscore(name[0]) && name[0] != ':') return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiLetterOrUnderscore(c) && !IsAsciiDigit(c) && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || !IsAsciiLetterOrUnderscore(name[0])) return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiLetterOrUnderscore(c) && !IsAsciiDigit(c)) return false;
  }
  return true;
}

}  // namespace gpuscale::metrics
