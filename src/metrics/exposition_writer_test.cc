#include "metrics/exposition_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/numbers.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::metrics {
namespace {

// Families equal, with NaN equal to NaN (the round trip must keep NaN samples).
void ExpectSameFamilies(const std::vector<MetricFamily>& a, const std::vector<MetricFamily>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t f = 0; f < a.size(); ++f) {
    EXPECT_EQ(a[f].name, b[f].name);
    EXPECT_EQ(a[f].help, b[f].help);
    EXPECT_EQ(a[f].type, b[f].type);
    ASSERT_EQ(a[f].samples.size(), b[f].samples.size()) << a[f].name;
    for (size_t s = 0; s < a[f].samples.size(); ++s) {
      const Sample& x = a[f].samples[s];
      const Sample& y = b[f].samples[s];
      EXPECT_EQ(x.name, y.name);
      EXPECT_EQ(x.labels, y.labels);
      EXPECT_EQ(x.timestamp_ms, y.timestamp_ms);
      if (std::isnan(x.value)) {
        EXPECT_TRUE(std::isnan(y.value)) << x.name;
      } else {
        EXPECT_EQ(x.value, y.value) << x.name;
      }
    }
  }
}

TEST(ExpositionWriterTest, WritesGaugeWithEscapedHelpAndLabels) {
  ExpositionWriter w;
  w.BeginFamily("gpuscale_replicas", MetricType::kGauge, "Replicas by state.\nSee \\docs.");
  std::vector<Label> labels = {{"service", "chat \"a\""}, {"path", "C:\\x\ny"}};
  w.AddValue(labels, 3);
  w.AddSample("gpuscale_replicas", {}, std::nan(""), 1700000000000);
  EXPECT_EQ(w.Take(),
            "# HELP gpuscale_replicas Replicas by state.\\nSee \\\\docs.\n"
            "# TYPE gpuscale_replicas gauge\n"
            "gpuscale_replicas{service=\"chat \\\"a\\\"\",path=\"C:\\\\x\\ny\"} 3\n"
            "gpuscale_replicas NaN 1700000000000\n");
  EXPECT_TRUE(w.text().empty());
}

TEST(ExpositionWriterTest, WritesHistogramBucketsSumAndCount) {
  ExpositionWriter w;
  w.BeginFamily("vllm:e2e_request_latency_seconds", MetricType::kHistogram);
  std::vector<Label> labels = {{"model_name", "m"}};
  std::vector<double> bounds = {0.5, 1};
  std::vector<double> counts = {2, 5};
  w.AddHistogram(labels, bounds, counts, 3.25);
  EXPECT_EQ(w.text(),
            "# TYPE vllm:e2e_request_latency_seconds histogram\n"
            "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"0.5\"} 2\n"
            "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"1\"} 5\n"
            "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 5\n"
            "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 3.25\n"
            "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 5\n");
}

TEST(ExpositionWriterTest, RoundTripsSpecialValuesAndLabels) {
  ExpositionWriter w;
  w.BeginFamily("a:b", MetricType::kCounter, "help with \\ and\nnewline");
  w.AddValue(std::vector<Label>{{"x", "\"q\"\\\n"}}, 0.1 + 0.2);  // needs all 17 digits
  w.AddValue(std::vector<Label>{{"x", "inf"}}, kInf);
  w.AddValue(std::vector<Label>{{"x", "-inf"}}, -kInf);
  w.AddValue(std::vector<Label>{{"x", "tiny"}}, 5e-324);
  w.AddValue(std::vector<Label>{{"x", "big"}}, 1.7976931348623157e308);
  w.BeginFamily("h", MetricType::kHistogram, "");
  w.AddHistogram({}, std::vector<double>{0.001, 2560, kInf}, std::vector<double>{1, 2, 3}, 7);
  Result<Exposition> first = ParsePrometheusText(w.text());
  ASSERT_TRUE(first) << first.error().ToString() << "\n" << w.text();
  ASSERT_EQ(first->families.size(), 2u);
  EXPECT_EQ(first->families[0].samples.at(0).value, 0.1 + 0.2);
  EXPECT_EQ(first->families[0].samples.at(0).labels.at(0).value, "\"q\"\\\n");
  EXPECT_EQ(first->families[0].samples.at(3).value, 5e-324);
  EXPECT_EQ(first->families[1].samples.size(), 5u);
  Result<Exposition> second = ParsePrometheusText(WritePrometheusText(first->families));
  ASSERT_TRUE(second) << second.error().ToString();
  ExpectSameFamilies(first->families, second->families);
}

TEST(ExpositionWriterTest, RoundTripsVllmFixture) {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) + "/src/metrics/testdata/vllm_metrics.txt");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Result<Exposition> parsed = ParsePrometheusText(buffer.str());
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->SampleCount(), 88u);
  Result<Exposition> again = ParsePrometheusText(WritePrometheusText(parsed->families));
  ASSERT_TRUE(again) << again.error().ToString();
  ExpectSameFamilies(parsed->families, again->families);
}

}  // namespace
}  // namespace gpuscale::metrics
