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
  const std::vector<std::pair<std::string, MetricType>> families = {
      {"vllm:num_requests_running", MetricType::kGauge},
      {"vllm:num_requests_waiting", MetricType::kGauge},
      {"vllm:gpu_cache_usage_perc", MetricType::kGauge},
      {"vllm:prompt_tokens_total", MetricType::kCounter},
      {"vllm:generation_tokens_total", MetricType::kCounter},
      {"vllm:request_success_total", MetricType::kCounter},
      {"vllm:time_to_first_token_seconds", MetricType::kHistogram},
      {"vllm:e2e_request_latency_seconds", MetricType::kHistogram},
  };
  for (const auto& [name, type] : families) {
    const metrics::MetricFamily* family = parsed->FindFamily(name);
    ASSERT_NE(family, nullptr) << name;
    EXPECT_EQ(family->type, type) << name;
    EXPECT_FALSE(family->help.empty()) << name;
    for (const metrics::Sample& sample : family->samples) {
      ASSERT_NE(sample.FindLabel("model_name"), nullptr) << sample.name;
      EXPECT_EQ(*sample.FindLabel("model_name"), "llama");
    }
  }
  const std::vector<metrics::LabelMatcher> model{{"model_name", "llama"}};
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:num_requests_running", model), 1);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:num_requests_waiting", model), 0);
  EXPECT_DOUBLE_EQ(*metrics::FindValue(*parsed, "vllm:gpu_cache_usage_perc", model), 0.4);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:prompt_tokens_total", model), 500);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:generation_tokens_total", model), 6);
  EXPECT_EQ(
      *metrics::FindValue(*parsed, "vllm:request_success_total", {{{"finished_reason", "length"}}}),
      2);
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
  const std::vector<Case> cases = {
      {"vllm:e2e_request_latency_seconds",
       {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,  20,
        30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680},
       2},
      {"vllm:time_to_first_token_seconds",
       {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
        1,     2.5,   5,    7.5,  10,   20,   40,   80,  160,  640, 2560},
       3},
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
  // Bounds are written the way vLLM's Python client writes them.
  EXPECT_NE(text.find("vllm:e2e_request_latency_seconds_bucket{le=\"5.0\",model_name=\"llama\"}"),
            std::string::npos);
  EXPECT_NE(text.find("le=\"0.001\""), std::string::npos);
}

}  // namespace
}  // namespace gpuscale::emulator
