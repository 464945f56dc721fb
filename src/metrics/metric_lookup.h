// Lookups that pull what the controller needs out of a parsed exposition: one gauge or
// counter value (e.g. `vllm:num_requests_waiting`) and one histogram (e.g.
// `vllm:e2e_request_latency_seconds`) as arrays ready for HistogramWindow::Add.
//
// Label matching follows PromQL equality matchers: every matcher must equal the sample's
// label value, and a matcher with an empty value matches a sample without that label.
//
// Thread-safety: stateless functions over const data.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "metrics/metric_family.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::metrics {

struct LabelMatcher {
  std::string name;
  std::string value;
};

// What to do when several label sets match.
enum class Combine {
  kSingle,  // exactly one series must match (FailedPrecondition otherwise)
  kSum,     // add them up, e.g. requests running across all models of one replica
};

// Whether `sample` satisfies every matcher.
bool Matches(const Sample& sample, std::span<const LabelMatcher> matchers);

// The value of the sample named `name` (full sample name, e.g. "vllm:prompt_tokens_total")
// whose labels satisfy `matchers`. Errors: NotFound when no sample matches; FailedPrecondition
// when several match and combine is kSingle (the message says how many and suggests a matcher).
Result<double> FindValue(const Exposition& exposition, std::string_view name,
                         std::span<const LabelMatcher> matchers = {},
                         Combine combine = Combine::kSingle);

// One cumulative histogram, bounds ascending and ending with +Inf.
struct HistogramSnapshot {
  std::vector<double> upper_bounds;
  std::vector<double> cumulative_counts;  // same length as upper_bounds
  double count = 0;                       // _count (equals the +Inf bucket)
  double sum = 0;                         // _sum
};

// The histogram `base_name` (without _bucket) from its `_bucket{le}`, `_count` and `_sum`
// samples whose labels (other than le) satisfy `matchers`; when several label sets match, their
// buckets are added up. A missing +Inf bucket is taken from _count. Errors: NotFound when no
// bucket sample matches; InvalidArgument for an unparsable le; FailedPrecondition when the
// matching series have different bucket layouts.
Result<HistogramSnapshot> FindHistogram(const Exposition& exposition, std::string_view base_name,
                                        std::span<const LabelMatcher> matchers = {});

}  // namespace gpuscale::metrics
