// Prometheus text parsing and metric-window query speed. The daemon scrapes every replica's
// /metrics each control tick (thousands per tick on a large fleet), so parsing must run at
// hundreds of MB/s, and window queries at well under a microsecond each.
//   build-metrics/bench/prom_parse_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <limits>
#include <string>
#include <vector>

#include "metrics/exposition_writer.h"
#include "metrics/metric_lookup.h"
#include "metrics/metric_window.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<double> kE2eBounds = {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,   20,
                                        30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680, kInf};
const std::vector<double> kTtftBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                         0.25,  0.5,   0.75, 1,    2.5,  5,    7.5,  10,
                                         20,    40,    80,   160,  640,  2560, kInf};

// Cumulative counts that rise like a latency distribution, varied by replica.
std::vector<double> Cumulative(size_t n, int replica) {
  std::vector<double> counts(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    total += static_cast<double>((replica * 7 + i * 13) % 97) * 3.0;
    counts[i] = total;
  }
  return counts;
}

// One vLLM replica's exposition: the gauges, counters and histograms vLLM serves.
void WriteReplica(ExpositionWriter& w, int replica) {
  const std::vector<Label> labels = {{"model_name", "meta-llama/Llama-3.1-8B-Instruct"},
                                     {"replica", fmt::format("replica-{}", replica)}};
  const char* gauges[] = {"vllm:num_requests_running", "vllm:num_requests_waiting",
                          "vllm:num_requests_swapped", "vllm:gpu_cache_usage_perc",
                          "vllm:cpu_cache_usage_perc"};
  for (const char* name : gauges) {
    w.BeginFamily(name, MetricType::kGauge, "A vLLM scheduler gauge.");
    w.AddValue(labels, replica * 0.37);
  }
  const char* counters[] = {"vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                            "vllm:num_preemptions_total"};
  for (const char* name : counters) {
    w.BeginFamily(name, MetricType::kCounter, "A vLLM token counter.");
    w.AddValue(labels, 1234567.0 + replica);
  }
  w.BeginFamily("vllm:e2e_request_latency_seconds", MetricType::kHistogram,
                "Histogram of end to end request latency in seconds.");
  w.AddHistogram(labels, kE2eBounds, Cumulative(kE2eBounds.size(), replica), 2450.5);
  w.BeginFamily("vllm:time_to_first_token_seconds", MetricType::kHistogram,
                "Histogram of time to first token in seconds.");
  w.AddHistogram(labels, kTtftBounds, Cumulative(kTtftBounds.size(), replica), 123.4);
}

std::string ReplicaText(int replica) {
  ExpositionWriter w;
  WriteReplica(w, replica);
  return w.Take();
}

// `replicas` replicas' expositions concatenated (family names repeat, so each replica gets
// distinct names to keep the text valid as one exposition).
std::string FleetText(int replicas) {
  std::string text;
  for (int r = 0; r < replicas; ++r) {
    std::string one = ReplicaText(r);
    // Prefix family names per replica: `vllm:` -> `r<N>_vllm:`.
    size_t pos = 0;
    const std::string prefix = fmt::format("r{}_vllm:", r);
    while ((pos = one.find("vllm:", pos)) != std::string::npos) {
      if (pos > 0 && one[pos - 1] == '"') {  // inside a label value: leave it
        pos += 5;
        continue;
      }
      one.replace(pos, 5, prefix);
      pos += prefix.size();
    }
    text += one;
  }
  return text;
}

void BM_ParseFleetExposition(benchmark::State& state) {
  const std::string text = FleetText(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Result<Exposition> parsed = ParsePrometheusText(text);
    if (!parsed) state.SkipWithError(parsed.error().ToString().c_str());
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["text_mb"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_ParseFleetExposition)->Arg(100)->Arg(400)->Unit(benchmark::kMillisecond);

// What one tick does: 100 replicas scraped separately, each parsed and reduced to the values
// the controller reads.
void BM_ParseAndExtractPerReplica(benchmark::State& state) {
  std::vector<std::string> bodies;
  size_t bytes = 0;
  for (int r = 0; r < 100; ++r) {
    bodies.push_back(ReplicaText(r));
    bytes += bodies.back().size();
  }
  for (auto _ : state) {
    double waiting = 0;
    for (const std::string& body : bodies) {
      Result<Exposition> parsed = ParsePrometheusText(body, ParseOptions{.skip_bad_lines = true});
      waiting += FindValue(*parsed, "vllm:num_requests_waiting").value_or(0);
      Result<HistogramSnapshot> h = FindHistogram(*parsed, "vllm:e2e_request_latency_seconds");
      benchmark::DoNotOptimize(h);
    }
    benchmark::DoNotOptimize(waiting);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 100);  // replicas
}
BENCHMARK(BM_ParseAndExtractPerReplica)->Unit(benchmark::kMillisecond);

// A 600 s retention at 1 s scrapes; queries over the last 60 s.
void BM_SeriesWindowRate(benchmark::State& state) {
  SeriesWindow w(Seconds{600});
  for (int t = 0; t < 600; ++t) w.Add(Seconds{static_cast<double>(t)}, t * 3.0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(w.Rate(Seconds{599}, Seconds{60}));
    benchmark::DoNotOptimize(w.Average(Seconds{599}, Seconds{60}));
  }
}
BENCHMARK(BM_SeriesWindowRate);

void BM_HistogramWindowQueries(benchmark::State& state) {
  HistogramWindow w(Seconds{600});
  std::vector<double> counts(kE2eBounds.size());
  for (int t = 0; t < 600; ++t) {
    for (size_t b = 0; b < counts.size(); ++b) counts[b] += static_cast<double>(b + 1);
    w.Add(Seconds{static_cast<double>(t)}, kE2eBounds, counts, t * 10.0);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(w.FractionAbove(Seconds{599}, Seconds{state.range(0) * 1.0}, 2.0));
    benchmark::DoNotOptimize(w.Quantile(Seconds{599}, Seconds{state.range(0) * 1.0}, 0.99));
  }
}
BENCHMARK(BM_HistogramWindowQueries)->Arg(60)->Arg(600);

}  // namespace
}  // namespace gpuscale::metrics

BENCHMARK_MAIN();
