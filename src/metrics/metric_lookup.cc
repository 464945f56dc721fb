#include "metrics/metric_lookup.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <algorithm>
#include <vector>

namespace gpuscale::metrics {
namespace {

std::string DescribeMatchers(std::span<const LabelMatcher> matchers) {
  std::string out = "{";
  for (const LabelMatcher& m : matchers) {
    if (out.size() > 1) out += ",";
    out += fmt::format("{}=\"{}\"", m.name, m.value);
  }
  return out + "}";
}

// Calls fn(sample) for every sample named `name` that satisfies `matchers`. Every sample's name
// starts with its family's name, which skips most families without looking at their samples.
template <typename Fn>
void ForEachMatch(const Exposition& exposition, std::string_view name,
                  std::span<const LabelMatcher> matchers, Fn&& fn) {
  for (const MetricFamily& family : exposition.families) {
    if (!name.starts_with(family.name)) continue;
    for (const Sample& sample : family.samples) {
      if (sample.name == name && Matches(sample, matchers)) fn(sample);
    }
  }
}

struct BucketTotal {
  double bound = 0;
  double count = 0;
  int series = 0;  // how many label sets contributed this bound
};

// Adds up the `_bucket` samples of `base_name` by bound, ascending. A flat vector rather than
// a map: one series' buckets arrive in order, so each is appended (a fleet's tick reads
// 30,000 histograms). Errors as FindHistogram's.
Result<std::vector<BucketTotal>> CollectBuckets(const Exposition& exposition,
                                                std::string_view base_name,
                                                std::span<const LabelMatcher> matchers) {
  std::vector<BucketTotal> buckets;
  Status status = OkStatus();
  const std::string bucket_name = fmt::format("{}_bucket", base_name);
  ForEachMatch(exposition, bucket_name, matchers, [&](const Sample& sample) {
    if (!status) return;
    const std::string* le = sample.FindLabel("le");
    Result<double> bound = le ? ParsePrometheusValue(*le) : InvalidArgument("missing");
    if (!bound || std::isnan(*bound)) {
      status = InvalidArgument(fmt::format("{} sample without a numeric 'le' label (found '{}')",
                                           bucket_name, le ? *le : ""));
      return;
    }
    auto it = buckets.empty() || buckets.back().bound < *bound
                  ? buckets.end()
                  : std::lower_bound(buckets.begin(), buckets.end(), *bound,
                                     [](const BucketTotal& b, double v) { return b.bound < v; });
    if (it == buckets.end() || it->bound != *bound) it = buckets.insert(it, {*bound, 0, 0});
    it->count += sample.value;
    ++it->series;
  });
  GS_RETURN_IF_ERROR(status);
  if (buckets.empty()) {
    return NotFound(fmt::format("no histogram {} matching {} in the exposition", bucket_name,
                                DescribeMatchers(matchers)));
  }
  for (const BucketTotal& total : buckets) {
    if (total.series != buckets.front().series) {
      return FailedPrecondition(fmt::format(
          "histogram {} matching {} has series with different bucket layouts; add label "
          "matchers to select one series",
          base_name, DescribeMatchers(matchers)));
    }
  }
  return buckets;
}

}  // namespace

bool Matches(const Sample& sample, std::span<const LabelMatcher> matchers) {
  for (const LabelMatcher& matcher : matchers) {
    const std::string* value = sample.FindLabel(matcher.name);
    if (value == nullptr ? !matcher.value.empty() : *value != matcher.value) return false;
  }
  return true;
}

Result<double> FindValue(const Exposition& exposition, std::string_view name,
                         std::span<const LabelMatcher> matchers, Combine combine) {
  double total = 0;
  int matched = 0;
  ForEachMatch(exposition, name, matchers, [&](const Sample& sample) {
    total += sample.value;
    ++matched;
  });
  if (matched == 0) {
    return NotFound(fmt::format("no sample {} matching {} in the exposition", name,
                                DescribeMatchers(matchers)));
  }
  if (matched > 1 && combine == Combine::kSingle) {
    return FailedPrecondition(
        fmt::format("{} series named {} match {}; add label matchers to select one, or sum them",
                    matched, name, DescribeMatchers(matchers)));
  }
  return total;
}

Result<HistogramSnapshot> FindHistogram(const Exposition& exposition, std::string_view base_name,
                                        std::span<const LabelMatcher> matchers) {
  GS_ASSIGN_OR_RETURN(auto buckets, CollectBuckets(exposition, base_name, matchers));
  HistogramSnapshot out;
  out.upper_bounds.reserve(buckets.size() + 1);
  out.cumulative_counts.reserve(buckets.size() + 1);
  for (const BucketTotal& total : buckets) {
    out.upper_bounds.push_back(total.bound);
    out.cumulative_counts.push_back(total.count);
  }
  bool has_count = false;
  ForEachMatch(exposition, fmt::format("{}_count", base_name), matchers, [&](const Sample& sample) {
    out.count += sample.value;
    has_count = true;
  });
  ForEachMatch(exposition, fmt::format("{}_sum", base_name), matchers,
               [&](const Sample& sample) { out.sum += sample.value; });
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (out.upper_bounds.back() != kInf) {
    if (!has_count) {
      return InvalidArgument(
          fmt::format("histogram {} has neither a +Inf bucket nor a _count sample", base_name));
    }
    out.upper_bounds.push_back(kInf);
    out.cumulative_counts.push_back(out.count);
  }
  if (!has_count) out.count = out.cumulative_counts.back();
  return out;
}

}  // namespace gpuscale::metrics
