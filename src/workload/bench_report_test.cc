#include "workload/bench_report.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
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

RequestOutcome Classed(RequestOutcome outcome, std::optional<route::Priority> priority,
                       std::string tenant) {
  outcome.priority = priority;
  outcome.tenant = std::move(tenant);
  return outcome;
}

// The overload experiment's figures (scripts/bench-overload): per priority, completions
// within the SLO and late ones, 429s apart from other failures, completions per tenant.
TEST(BenchReportTest, SplitsOutcomesByPriorityAndTenantAndJudgesTheSlo) {
  using route::Priority;
  const std::vector<RequestOutcome> outcomes = {
      Classed(Ok(0.5, 1.4, 10, {}), Priority::kCritical, "t0"),   // TPOT 0.1: within
      Classed(Ok(1.5, 1.6, 2, {}), Priority::kCritical, "t1"),    // TTFT 1.5 > 1: late
      Classed(Ok(0.1, 2.0, 10, {}), Priority::kCritical, "t1"),   // TPOT 0.21 > 0.2: late
      Classed(Failed("http_429"), Priority::kSheddable, "t0"),    // shed
      Classed(Failed("read_error"), Priority::kSheddable, "t0"),  // a timeout, not shed
      Classed(Ok(0.2, 0.3, 2, {}), Priority::kSheddable, "t2"),
      Classed(Ok(0.2, 0.3, 2, {}), std::nullopt, "")};
  BenchReport report = Aggregate(outcomes, 1.0);
  const std::vector<PriorityClassReport> rows =
      ReportByPriority(outcomes, BenchSlo{.ttft_seconds = 1, .tpot_seconds = 0.2});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(PriorityClassName(rows[0]), "critical");
  EXPECT_EQ(rows[0].sent, 3);
  EXPECT_EQ(rows[0].within_slo, 1);
  EXPECT_EQ(rows[0].late, 2);
  EXPECT_EQ(rows[0].completed_by_tenant, (std::map<std::string, int64_t>{{"t0", 1}, {"t1", 2}}));
  EXPECT_EQ(PriorityClassName(rows[1]), "sheddable");
  EXPECT_EQ(rows[1].sent, 3);
  EXPECT_EQ(rows[1].shed, 1);
  EXPECT_EQ(rows[1].failed, 1);
  EXPECT_EQ(rows[1].within_slo, 1);
  EXPECT_EQ(rows[1].completed_by_tenant, (std::map<std::string, int64_t>{{"t2", 1}}));
  EXPECT_EQ(PriorityClassName(rows[2]), "none");
  EXPECT_EQ(rows[2].sent, 1);
  EXPECT_EQ(report.requests_sent, 7);  // the totals are unchanged by the split

  // Without an SLO every completion is within it; without classes there are no rows.
  EXPECT_EQ(ReportByPriority(outcomes, BenchSlo{})[0].within_slo, 3);
  EXPECT_TRUE(ReportByPriority({Ok(0.1, 0.2, 2, {})}, BenchSlo{}).empty());
}

}  // namespace
}  // namespace gpuscale::loadgen
