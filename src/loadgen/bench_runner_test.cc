#include "loadgen/bench_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::loadgen {
namespace {

RequestOutcome Ok(double ttft, double e2e, int32_t tokens, std::vector<double> gaps) {
  RequestOutcome outcome;
  outcome.ok = true;
  outcome.ttft_seconds = ttft;
  outcome.e2e_seconds = e2e;
  outcome.input_tokens = 100;
  outcome.output_tokens = tokens;
  outcome.inter_token_seconds = std::move(gaps);
  return outcome;
}

RequestOutcome Failed(std::string kind) {
  RequestOutcome outcome;
  outcome.error_kind = std::move(kind);
  outcome.error_detail = "detail of " + outcome.error_kind;
  return outcome;
}

TEST(BenchRunnerTest, AggregatesThroughputLatenciesAndErrors) {
  const std::vector<RequestOutcome> outcomes = {
      Ok(0.1, 0.5, 5, {0.1, 0.1, 0.1, 0.1}), Ok(0.3, 0.9, 4, {0.2, 0.2, 0.2}), Failed("http_503"),
      Failed("http_503"), Failed("read_error")};
  BenchReport report = Aggregate(outcomes, 2.0);
  EXPECT_EQ(report.requests_sent, 5);
  EXPECT_EQ(report.requests_completed, 2);
  EXPECT_EQ(report.requests_failed, 3);
  EXPECT_EQ(report.errors_by_kind.at("http_503"), 2);
  EXPECT_EQ(report.errors_by_kind.at("read_error"), 1);
  EXPECT_EQ(report.first_error_detail, "detail of http_503");
  EXPECT_EQ(report.output_tokens_total, 9);
  EXPECT_DOUBLE_EQ(report.request_throughput_per_second, 1.0);
  EXPECT_DOUBLE_EQ(report.output_token_throughput_per_second, 4.5);
  EXPECT_DOUBLE_EQ(report.input_token_throughput_per_second, 100);
  EXPECT_DOUBLE_EQ(report.ttft_seconds.mean, 0.2);
  EXPECT_DOUBLE_EQ(report.ttft_seconds.p50, 0.2);
  EXPECT_EQ(report.inter_token_latency_seconds.count, 7);
  EXPECT_DOUBLE_EQ(report.inter_token_latency_seconds.max, 0.2);
  // (0.5 - 0.1) / 4 and (0.9 - 0.3) / 3
  EXPECT_DOUBLE_EQ(report.time_per_output_token_seconds.min, 0.1);
  EXPECT_DOUBLE_EQ(report.time_per_output_token_seconds.max, 0.2);
  EXPECT_DOUBLE_EQ(report.e2e_latency_seconds.max, 0.9);
}

TEST(BenchRunnerTest, ValidationNamesTheFlag) {
  const std::vector<std::pair<void (*)(BenchOptions&), std::string>> cases = {
      {[](BenchOptions& o) { o.url = "localhost:8000"; }, "--url"},
      {[](BenchOptions& o) { o.concurrency = 0; }, "--concurrency"},
      {[](BenchOptions& o) { o.duration_seconds = 0; }, "--duration"},
      {[](BenchOptions& o) { o.drain_timeout_seconds = -1; }, "--drain-timeout"},
      {[](BenchOptions& o) { o.client.read_timeout_seconds = 0; }, "--request-timeout"},
      {[](BenchOptions& o) { o.workload.input.mean_tokens = 0; }, "--input-tokens"},
  };
  for (const auto& [mutate, flag] : cases) {
    BenchOptions options;
    options.url = "http://127.0.0.1:1";
    ASSERT_TRUE(ValidateBenchOptions(options).has_value());
    mutate(options);
    Status status = ValidateBenchOptions(options);
    ASSERT_FALSE(status.has_value()) << flag;
    EXPECT_EQ(status.error().field, flag);
  }
}

}  // namespace
}  // namespace gpuscale::loadgen
