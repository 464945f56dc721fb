#include "workload/bench_report.h"

#include <algorithm>
#include <utility>

namespace gpuscale::loadgen {

BenchReport Aggregate(const std::vector<RequestOutcome>& outcomes, double elapsed_seconds) {
  BenchReport report;
  report.elapsed_seconds = elapsed_seconds;
  std::vector<double> ttft, itl, tpot, e2e;
  for (const RequestOutcome& outcome : outcomes) {
    ++report.requests_sent;
    if (outcome.queued_seconds >= kQueuedSeconds) {
      ++report.requests_queued;
      report.queue_wait_max_seconds =
          std::max(report.queue_wait_max_seconds, outcome.queued_seconds);
    }
    if (!outcome.ok) {
      ++report.requests_failed;
      ++report.errors_by_kind[outcome.error_kind];
      if (report.first_error_detail.empty()) report.first_error_detail = outcome.error_detail;
      continue;
    }
    ++report.requests_completed;
    report.input_tokens_total += outcome.input_tokens;
    report.output_tokens_total += outcome.output_tokens;
    ttft.push_back(outcome.ttft_seconds);
    e2e.push_back(outcome.e2e_seconds);
    itl.insert(itl.end(), outcome.inter_token_seconds.begin(), outcome.inter_token_seconds.end());
    if (outcome.output_tokens > 1) {
      tpot.push_back((outcome.e2e_seconds - outcome.ttft_seconds) / (outcome.output_tokens - 1));
    }
  }
  if (elapsed_seconds > 0) {
    report.request_throughput_per_second =
        static_cast<double>(report.requests_completed) / elapsed_seconds;
    report.output_token_throughput_per_second =
        static_cast<double>(report.output_tokens_total) / elapsed_seconds;
    report.input_token_throughput_per_second =
        static_cast<double>(report.input_tokens_total) / elapsed_seconds;
  }
  report.ttft_seconds = Summarize(std::move(ttft));
  report.inter_token_latency_seconds = Summarize(std::move(itl));
  report.time_per_output_token_seconds = Summarize(std::move(tpot));
  report.e2e_latency_seconds = Summarize(std::move(e2e));
  return report;
}

}  // namespace gpuscale::loadgen
