#include "scale/enum_names.h"

#include <array>

namespace gpuscale::scale {

namespace {

constexpr std::array<Spelling<Comparator>, 4> kComparators = {{
    {Comparator::kLessThan, "LESS_THAN"},
    {Comparator::kLessThanOrEqual, "LESS_THAN_OR_EQUAL"},
    {Comparator::kGreaterThan, "GREATER_THAN"},
    {Comparator::kGreaterThanOrEqual, "GREATER_THAN_OR_EQUAL"},
}};

constexpr std::array<Spelling<MetricSource>, 4> kSources = {{
    {MetricSource::kInferenceFramework, "inference_framework"},
    {MetricSource::kKernel, "kernel"},
    // The metric is a PromQL expression the daemon sends to its Prometheus server.
    {MetricSource::kPrometheus, "prometheus"},
    // gateway:* values (scale/metric_names.h): what clients saw at the daemon's gateway.
    {MetricSource::kGateway, "gateway"},
}};

constexpr std::array<Spelling<Aggregation>, 4> kAggregations = {{
    {Aggregation::kAverage, "average"},
    {Aggregation::kMax, "max"},
    {Aggregation::kMin, "min"},
    {Aggregation::kSum, "sum"},
}};

}  // namespace

Spellings<Comparator> ComparatorSpellings() { return kComparators; }
Spellings<MetricSource> MetricSourceSpellings() { return kSources; }
Spellings<Aggregation> AggregationSpellings() { return kAggregations; }

std::string_view ComparatorName(Comparator comparator) {
  return NameIn(ComparatorSpellings(), comparator);
}
std::string_view MetricSourceName(MetricSource source) {
  return NameIn(MetricSourceSpellings(), source);
}
std::string_view AggregationName(Aggregation aggregation) {
  return NameIn(AggregationSpellings(), aggregation);
}

}  // namespace gpuscale::scale
