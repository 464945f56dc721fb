#include "emulator/vllm_metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "metrics/metric_lookup.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::emulator {
namespace {

using metrics::MetricType;

// An engine that has finished two requests and runs a third.
EngineStats BusyEngineStats() {
  EngineConfig config;
  config.decode_ms_base = 10;
  config.decode_ms_per_seq = 0;
  config.prefill_ms_per_1k_tokens = 0;
  config.kv_cache_tokens = 1000;
  BatchEngine engine(config);
  EXPECT_TRUE(engine.Submit(100, 2, Seconds{0}).has_value());
  EXPECT_TRUE(engine.Submit(100, 2, Seconds{0}).has_value());
  engine.Advance(Seconds{0.5});
  EXPECT_TRUE(engine.Submit(300, 100, Seconds{0.5}).has_value());
  engine.Advance(Seconds{0.52});
  return engine.stats();
}

TEST(VllmMetricsTest, ExposesVllmNamesTypesAndLabels) {
  Result<metrics::Exposition> parsed =
      metrics::ParsePrometheusText(RenderVllmMetrics(BusyEngineStats(), "llama"));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  // vLLM 0.12's set (vllm/v1/metrics/loggers.py), plus the KV gauge's former name.
  const std::vector<std::pair<std::string, MetricType>> families = {
      {"vllm:num_requests_running", MetricType::kGauge},
      {"vllm:num_requests_waiting", MetricType::kGauge},
      {"vllm:kv_cache_usage_perc", MetricType::kGauge},
      {"vllm:gpu_cache_usage_perc", MetricType::kGauge},
      {"vllm:num_preemptions_total", MetricType::kCounter},
      {"vllm:prompt_tokens_total", MetricType::kCounter},
      {"vllm:generation_tokens_total", MetricType::kCounter},
      {"vllm:prefix_cache_queries_total", MetricType::kCounter},
      {"vllm:prefix_cache_hits_total", MetricType::kCounter},
      {"vllm:request_success_total", MetricType::kCounter},
      {"vllm:time_to_first_token_seconds", MetricType::kHistogram},
      {"vllm:inter_token_latency_seconds", MetricType::kHistogram},
      {"vllm:request_time_per_output_token_seconds", MetricType::kHistogram},
      {"vllm:e2e_request_latency_seconds", MetricType::kHistogram},
      {"vllm:request_queue_time_seconds", MetricType::kHistogram},
      {"vllm:request_inference_time_seconds", MetricType::kHistogram},
      {"vllm:request_prefill_time_seconds", MetricType::kHistogram},
      {"vllm:request_decode_time_seconds", MetricType::kHistogram},
      {"vllm:request_prompt_tokens", MetricType::kHistogram},
      {"vllm:request_generation_tokens", MetricType::kHistogram},
  };
  for (const auto& [name, type] : families) {
    const metrics::MetricFamily* family = parsed->FindFamily(name);
    ASSERT_NE(family, nullptr) << name;
    EXPECT_EQ(family->type, type) << name;
    EXPECT_FALSE(family->help.empty()) << name;
    for (const metrics::Sample& sample : family->samples) {
      ASSERT_NE(sample.FindLabel("model_name"), nullptr) << sample.name;
      EXPECT_EQ(*sample.FindLabel("model_name"), "llama");
      ASSERT_NE(sample.FindLabel("engine"), nullptr) << sample.name;
      EXPECT_EQ(*sample.FindLabel("engine"), "0");
    }
  }
  EXPECT_EQ(parsed->families.size(), families.size());
  const std::vector<metrics::LabelMatcher> model{{"model_name", "llama"}, {"engine", "0"}};
  struct Value {
    std::string name;
    double expected;
  };
  const std::vector<Value> values = {
      {"vllm:num_requests_running", 1},    {"vllm:num_requests_waiting", 0},
      {"vllm:kv_cache_usage_perc", 0.4},   {"vllm:gpu_cache_usage_perc", 0.4},
      {"vllm:num_preemptions_total", 0},   {"vllm:prompt_tokens_total", 500},
      {"vllm:generation_tokens_total", 6}, {"vllm:prefix_cache_queries_total", 500},
      {"vllm:prefix_cache_hits_total", 0},
  };
  for (const Value& v : values) {
    Result<double> value = metrics::FindValue(*parsed, v.name, model);
    ASSERT_TRUE(value.has_value()) << v.name << ": " << value.error().ToString();
    EXPECT_DOUBLE_EQ(*value, v.expected) << v.name;
  }
  // Every finish reason's series exists from the start, as vLLM creates them up front.
  for (const auto& [reason, n] : {std::pair{"length", 2}, {"stop", 0}, {"abort", 0}}) {
    EXPECT_EQ(
        *metrics::FindValue(*parsed, "vllm:request_success_total", {{{"finished_reason", reason}}}),
        n)
        << reason;
  }
}

TEST(VllmMetricsTest, HistogramsUseVllmBuckets) {
  const std::string text = RenderVllmMetrics(BusyEngineStats(), "llama");
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(text);
  ASSERT_TRUE(parsed.has_value());
  struct Case {
    std::string name;
    std::vector<double> bounds;
    double count;
  };
  const std::vector<double> request_latency = {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,  20,
                                               30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680};
  const std::vector<double> per_token = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                         0.75, 1,     2.5,  5,     7.5, 10,   20,  40,  80};
  // 1-2-5 up to the engine's longest request: its 1000-token KV cache.
  const std::vector<double> tokens = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
  // Two requests finished (2 tokens each, one gap each); the third has two tokens so far.
  const std::vector<Case> cases = {
      {"vllm:e2e_request_latency_seconds", request_latency, 2},
      {"vllm:request_queue_time_seconds", request_latency, 2},
      {"vllm:request_inference_time_seconds", request_latency, 2},
      {"vllm:request_prefill_time_seconds", request_latency, 2},
      {"vllm:request_decode_time_seconds", request_latency, 2},
      {"vllm:time_to_first_token_seconds",
       {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
        1,     2.5,   5,    7.5,  10,   20,   40,   80,  160,  640, 2560},
       3},
      {"vllm:inter_token_latency_seconds", per_token, 3},
      {"vllm:request_time_per_output_token_seconds", per_token, 2},
      {"vllm:request_prompt_tokens", tokens, 2},
      {"vllm:request_generation_tokens", tokens, 2},
  };
  for (const Case& c : cases) {
    Result<metrics::HistogramSnapshot> h = metrics::FindHistogram(*parsed, c.name);
    ASSERT_TRUE(h.has_value()) << c.name << ": " << h.error().ToString();
    std::vector<double> expected = c.bounds;
    expected.push_back(std::numeric_limits<double>::infinity());
    EXPECT_EQ(h->upper_bounds, expected) << c.name;
    EXPECT_EQ(h->count, c.count) << c.name;
  }
  // The first request ran alone in the first 10 ms step and finished at 20 ms; the second
  // joined at the second step and finished at 30 ms: both in the le=0.3 bucket.
  Result<metrics::HistogramSnapshot> e2e =
      metrics::FindHistogram(*parsed, "vllm:e2e_request_latency_seconds");
  EXPECT_EQ(e2e->cumulative_counts.front(), 2);
  EXPECT_NEAR(e2e->sum, 0.05, 1e-9);
  // Each finished request had one 10 ms gap between its two tokens.
  Result<metrics::HistogramSnapshot> tpot =
      metrics::FindHistogram(*parsed, "vllm:request_time_per_output_token_seconds");
  EXPECT_NEAR(tpot->sum, 0.02, 1e-9);
  // Labels sorted by name and bounds written the way vLLM's Python client writes them.
  EXPECT_NE(text.find("vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"5.0\","
                      "model_name=\"llama\"}"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:request_success_total{engine=\"0\",finished_reason=\"length\","
                      "model_name=\"llama\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("le=\"0.001\""), std::string::npos);
}

// The emulated-GPU gauges only when asked for: a real vLLM has none, and the emulator
// without a footprint imitates it exactly.
TEST(VllmMetricsTest, EmulatedGpuGaugesFollowWhenGiven) {
  const std::string plain = RenderVllmMetrics(BusyEngineStats(), "llama");
  EXPECT_EQ(plain.find("gpuscale_emulator"), std::string::npos);
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(
      RenderVllmMetrics(BusyEngineStats(), "llama", EmulatedGpu{0.5, 1 << 30}));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(*metrics::FindValue(*parsed, "gpuscale_emulator_gpu_utilization_ratio"), 0.5);
  EXPECT_EQ(*metrics::FindValue(*parsed, "gpuscale_emulator_gpu_memory_used_bytes"), 1 << 30);
  EXPECT_EQ(parsed->FindFamily("gpuscale_emulator_gpu_memory_used_bytes")->type,
            MetricType::kGauge);
}

}  // namespace
}  // namespace gpuscale::emulator
