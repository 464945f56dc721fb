// What a benchmark run measured: each request's outcome (RequestOutcome, filled by
// loadgen::CompletionClient) and their aggregate (BenchReport: throughput, errors by kind,
// TTFT / inter-token / per-output-token / end-to-end latency percentiles, the numbers llmperf
// and genai-bench report). Pure: tasks, objectives and the experiment store read reports
// without linking the HTTP client that produces them.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "route/admission_queue.h"
#include "workload/latency_summary.h"
#include "workload/priority_report.h"

namespace gpuscale::loadgen {

struct RequestOutcome {
  bool ok = false;
  // Empty when ok, else one of: connection_error, connect_timeout, read_error (includes
  // read timeouts), write_error, cancelled, client_error, http_<status> (e.g. http_503),
  // incomplete_stream (ended without [DONE]), invalid_event (not JSON), server_error_event.
  std::string error_kind;
  std::string error_detail;  // first 200 bytes of the error body or event, for logs
  double ttft_seconds = 0;   // send -> first content event
  double e2e_seconds = 0;    // send -> [DONE]
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  std::vector<double> inter_token_seconds;  // gaps between successive content events
  // Open loop (rate, trace): when the arrival was due, seconds since the run's start, and how
  // long past that it waited in the bench for a free client (every one of `concurrency`
  // busy). The latencies above start at the send and leave that wait out. 0 in closed loop.
  double due_seconds = 0;
  double queued_seconds = 0;
  // The request's class as sent (PlannedRequest's): its priority header, nullopt when none
  // was sent, and its tenant header, "" when none was.
  std::optional<route::Priority> priority = std::nullopt;
  std::string tenant = {};
};

struct BenchReport {
  std::string url;
  std::string model;
  double elapsed_seconds = 0;  // start -> last request ended
  int64_t requests_sent = 0;
  int64_t requests_completed = 0;
  int64_t requests_failed = 0;
  std::map<std::string, int64_t> errors_by_kind;  // RequestOutcome::error_kind -> count
  std::string first_error_detail;                 // an example, for the table output
  int64_t input_tokens_total = 0;                 // of completed requests
  int64_t output_tokens_total = 0;                // of completed requests
  double request_throughput_per_second = 0;       // completed / elapsed
  double output_token_throughput_per_second = 0;  // output tokens / elapsed
  double input_token_throughput_per_second = 0;
  LatencySummary ttft_seconds;
  LatencySummary inter_token_latency_seconds;    // every gap between content events
  LatencySummary time_per_output_token_seconds;  // per request: (e2e - ttft) / (tokens - 1)
  LatencySummary e2e_latency_seconds;
  // Open loop: arrivals that waited kQueuedSeconds or more for a free client, and the longest
  // wait. Nonzero means the server was offered less than the rate asked for while every
  // client was busy, and latencies measured from each send understate what a user arriving
  // then would have seen (raise --concurrency).
  int64_t requests_queued = 0;
  double queue_wait_max_seconds = 0;
  // Every request's outcome, in the order they ended; filled only when asked
  // (BenchOptions::keep_outcomes), empty otherwise.
  std::vector<RequestOutcome> outcomes = {};
  // Per priority and tenant (ReportByPriority over every outcome, judged by
  // BenchOptions::slo); empty when the workload sent no priority or tenant.
  std::vector<PriorityClassReport> priorities = {};
};

// A wait past the due time this short is the dispatcher's wake-up, not a queue.
inline constexpr double kQueuedSeconds = 0.001;

// Aggregates request outcomes into a report over `elapsed_seconds` (url and model are left
// empty for the caller).
BenchReport Aggregate(const std::vector<RequestOutcome>& outcomes, double elapsed_seconds);

}  // namespace gpuscale::loadgen
