#include "scale/enum_names.h"

#include <array>

namespace gpuscale::scale {

namespace {

constexpr std::array<Spelling<Comparator>, 4> kComparators = {{
    {"LESS_THAN", Comparator::kLessThan},
    {"LESS_THAN_OR_EQUAL", Comparator::kLessThanOrEqual},
    {"GREATER_THAN", Comparator::kGreaterThan},
    {"GREATER_THAN_OR_EQUAL", Comparator::kGreaterThanOrEqual},
}};

constexpr std::array<Spelling<MetricSource>, 4> kSources = {{
    {"inference_framework", MetricSource::kInferenceFramework},
    {"kernel", MetricSource::kKernel},
    // The metric is a PromQL expression the daemon sends to its Prometheus server.
    {"prometheus", MetricSource::kPrometheus},
    // gateway:* values (scale/metric_names.h): what clients saw at the daemon's gateway.
    {"gateway", MetricSource::kGateway},
}};

constexpr std::array<Spelling<Aggregation>, 4> kAggregations = {{
    {"average", Aggregation::kAverage},
    {"max", Aggregation::kMax},
    {"min", Aggregation::kMin},
    {"sum", Aggregation::kSum},
}};

}  // namespace

Spellings<Comparator> ComparatorSpellings() { return kComparators; }
Spellings<MetricSource> MetricSourceSpellings() { return kSources; }
Spellings<Aggregation> AggregationSpellings() { return kAggregations; }

std::string_view ComparatorName(Comparator comparator) {
  return NameOf(ComparatorSpellings(), comparator);
}
std::string_view MetricSourceName(MetricSource source) {
  return NameOf(MetricSourceSpellings(), source);
}
std::string_view AggregationName(Aggregation aggregation) {
  return NameOf(AggregationSpellings(), aggregation);
}

}  // namespace gpuscale::scale
