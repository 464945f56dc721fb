// Summary statistics of a latency sample (TTFT, inter-token latency, end-to-end latency) as
// `gpuscale bench` reports them: count, mean, min, max and the 50th/90th/99th percentiles.
//
// Thread-safety: stateless functions over values.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuscale::loadgen {

struct LatencySummary {
  int64_t count = 0;  // 0 means no sample: every other field is 0 and should be shown as null
  double mean = 0;
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

// Percentile `q` in [0, 100] of ascending `sorted` values with linear interpolation between
// closest ranks (numpy's default, which llmperf and genai-bench report). REQUIRES: non-empty,
// ascending.
double Percentile(const std::vector<double>& sorted, double q);

// Summarises `values` (any order; taken by value to sort).
LatencySummary Summarize(std::vector<double> values);

}  // namespace gpuscale::loadgen
