#include "metrics/metric_lookup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/numbers.h"
#include "metrics/metric_window.h"
#include "metrics/prometheus_text_parser.h"

namespace gpuscale::metrics {
namespace {

using ::testing::HasSubstr;

const std::vector<LabelMatcher> kModel = {{"model_name", "meta-llama/Llama-3.1-8B-Instruct"}};

Exposition LoadVllmFixture() {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) + "/src/metrics/testdata/vllm_metrics.txt");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Result<Exposition> parsed = ParsePrometheusText(buffer.str());
  EXPECT_TRUE(parsed) << parsed.error().ToString();
  return parsed ? *parsed : Exposition{};
}

TEST(MetricLookupTest, FindsVllmGauges) {
  Exposition e = LoadVllmFixture();
  EXPECT_EQ(*FindValue(e, "vllm:num_requests_running", kModel), 7);
  EXPECT_EQ(*FindValue(e, "vllm:num_requests_waiting"), 3);
  EXPECT_DOUBLE_EQ(*FindValue(e, "vllm:gpu_cache_usage_perc", kModel), 0.4213);
  EXPECT_EQ(*FindValue(e, "vllm:generation_tokens_total"), 456789);
}

TEST(MetricLookupTest, SumsAcrossLabelSetsOnlyWhenAsked) {
  Exposition e = LoadVllmFixture();
  Result<double> single = FindValue(e, "vllm:request_success_total", kModel);
  ASSERT_FALSE(single);
  EXPECT_EQ(single.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(single.error().message, HasSubstr("3 series named vllm:request_success_total"));
  EXPECT_EQ(*FindValue(e, "vllm:request_success_total", kModel, Combine::kSum), 1000);
  std::vector<LabelMatcher> stop = {{"finished_reason", "stop"}};
  EXPECT_EQ(*FindValue(e, "vllm:request_success_total", stop), 950);
}

TEST(MetricLookupTest, ReportsMissingMetricAsNotFound) {
  Exposition e = LoadVllmFixture();
  std::vector<LabelMatcher> other = {{"model_name", "other"}};
  Result<double> missing = FindValue(e, "vllm:num_requests_running", other);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().message, HasSubstr("model_name=\"other\""));
  EXPECT_FALSE(FindValue(e, "vllm:no_such_metric"));
}

TEST(MetricLookupTest, EmptyMatcherValueMatchesAbsentLabel) {
  Result<Exposition> e = ParsePrometheusText("x{a=\"1\"} 1\nx{b=\"2\"} 2\n");
  ASSERT_TRUE(e);
  std::vector<LabelMatcher> no_a = {{"a", ""}};
  EXPECT_EQ(*FindValue(*e, "x", no_a), 2);
}

TEST(MetricLookupTest, FindsVllmHistogramsWithTheirBuckets) {
  Exposition e = LoadVllmFixture();
  Result<HistogramSnapshot> e2e = FindHistogram(e, "vllm:e2e_request_latency_seconds", kModel);
  ASSERT_TRUE(e2e) << e2e.error().ToString();
  EXPECT_EQ(e2e->upper_bounds,
            (std::vector<double>{0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,   20,
                                 30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680, kInf}));
  EXPECT_EQ(e2e->cumulative_counts.at(5), 520);
  EXPECT_EQ(e2e->count, 1000);
  EXPECT_DOUBLE_EQ(e2e->sum, 2450.5);
  Result<HistogramSnapshot> ttft = FindHistogram(e, "vllm:time_to_first_token_seconds");
  ASSERT_TRUE(ttft) << ttft.error().ToString();
  EXPECT_EQ(
      ttft->upper_bounds,
      (std::vector<double>{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,  0.75, 1,
                           2.5,   5,     7.5,  10,   20,   40,   80,   160, 640,  2560, kInf}));
}

TEST(MetricLookupTest, HistogramFeedsWindowForSloQueries) {
  Exposition e = LoadVllmFixture();
  Result<HistogramSnapshot> h = FindHistogram(e, "vllm:e2e_request_latency_seconds");
  ASSERT_TRUE(h);
  HistogramWindow w;
  std::vector<double> zeros(h->upper_bounds.size(), 0.0);
  w.Add(Seconds{0}, h->upper_bounds, zeros, 0);
  w.Add(Seconds{60}, h->upper_bounds, h->cumulative_counts, h->sum);
  // 520 of 1000 requests finished within 2 s.
  EXPECT_DOUBLE_EQ(*w.FractionAbove(Seconds{60}, Seconds{60}, 2.0), 0.48);
  EXPECT_DOUBLE_EQ(*w.FractionAbove(Seconds{60}, Seconds{60}, 2.2), 0.48);
  // p50: rank 500 in (1.5, 2] holding 220 above 300 -> 1.5 + 0.5 * 200/220.
  EXPECT_DOUBLE_EQ(*w.Quantile(Seconds{60}, Seconds{60}, 0.5), 1.5 + 0.5 * 200.0 / 220.0);
  EXPECT_DOUBLE_EQ(*w.Quantile(Seconds{60}, Seconds{60}, 0.99), 10.0);
  EXPECT_DOUBLE_EQ(*w.Mean(Seconds{60}, Seconds{60}), 2.4505);
}

TEST(MetricLookupTest, SumsHistogramSeriesAndFillsMissingInfBucket) {
  Result<Exposition> e = ParsePrometheusText(
      "# TYPE h histogram\n"
      "h_bucket{le=\"1\",m=\"a\"} 1\nh_count{m=\"a\"} 3\nh_sum{m=\"a\"} 4\n"
      "h_bucket{le=\"1\",m=\"b\"} 2\nh_count{m=\"b\"} 2\nh_sum{m=\"b\"} 1\n");
  ASSERT_TRUE(e) << e.error().ToString();
  Result<HistogramSnapshot> h = FindHistogram(*e, "h");
  ASSERT_TRUE(h) << h.error().ToString();
  EXPECT_EQ(h->upper_bounds, (std::vector<double>{1, kInf}));
  EXPECT_EQ(h->cumulative_counts, (std::vector<double>{3, 5}));
  EXPECT_EQ(h->count, 5);
  EXPECT_EQ(h->sum, 5);
}

TEST(MetricLookupTest, RejectsMixedBucketLayouts) {
  Result<Exposition> e = ParsePrometheusText(
      "h_bucket{le=\"1\",m=\"a\"} 1\nh_bucket{le=\"+Inf\",m=\"a\"} 1\n"
      "h_bucket{le=\"2\",m=\"b\"} 1\nh_bucket{le=\"+Inf\",m=\"b\"} 1\n");
  ASSERT_TRUE(e);
  Result<HistogramSnapshot> h = FindHistogram(*e, "h");
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ErrorCode::kFailedPrecondition);
  std::vector<LabelMatcher> a = {{"m", "a"}};
  EXPECT_TRUE(FindHistogram(*e, "h", a));
}

TEST(MetricLookupTest, RejectsUntypedBucketWithoutLe) {
  Result<Exposition> e = ParsePrometheusText("h_bucket 1\n");
  ASSERT_TRUE(e);
  Result<HistogramSnapshot> h = FindHistogram(*e, "h");
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(FindHistogram(*e, "nope").error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gpuscale::metrics
