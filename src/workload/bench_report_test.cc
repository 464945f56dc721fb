#include "workload/bench_report.h"

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

TEST(BenchReportTest, AggregatesThroughputLatenciesAndErrors) {
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

TEST(BenchReportTest, CountsArrivalsThatQueuedForAFreeClientAndTheLongestWait) {
  std::vector<RequestOutcome> outcomes = {Ok(0.1, 0.5, 5, {}), Ok(0.1, 0.5, 5, {}),
                                          Ok(0.1, 0.5, 5, {}), Failed("http_503")};
  outcomes[0].queued_seconds = 0.0002;  // the dispatcher's wake-up: not a queue
  outcomes[1].queued_seconds = 0.25;
  outcomes[3].queued_seconds = 0.75;  // a failed request queued as well
  BenchReport report = Aggregate(outcomes, 1.0);
  EXPECT_EQ(report.requests_queued, 2);
  EXPECT_DOUBLE_EQ(report.queue_wait_max_seconds, 0.75);
  EXPECT_DOUBLE_EQ(report.ttft_seconds.max, 0.1) << "latencies still start at the send";
}

}  // namespace
}  // namespace gpuscale::loadgen
