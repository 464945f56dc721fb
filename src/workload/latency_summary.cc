#include "workload/latency_summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpuscale::loadgen {

double Percentile(const std::vector<double>& sorted, double q) {
  const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

LatencySummary Summarize(std::vector<double> values) {
  LatencySummary summary;
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  summary.count = static_cast<int64_t>(values.size());
  summary.mean =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  summary.min = values.front();
  summary.max = values.back();
  summary.p50 = Percentile(values, 50);
  summary.p90 = Percentile(values, 90);
  summary.p99 = Percentile(values, 99);
  return summary;
}

}  // namespace gpuscale::loadgen
