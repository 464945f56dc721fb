// RunBench: the load generator behind `gpuscale bench`. Sends streaming completions to an
// OpenAI-compatible server (the emulator, vLLM, SGLang, ...) for a fixed duration, closed
// loop (N concurrent clients) or open loop (Poisson arrivals or a replayed trace), and
// reports TTFT, inter-token latency, time per output token and end-to-end latency
// percentiles, throughput and errors by kind — the numbers llmperf and genai-bench report.
//
// Timing: every latency is measured from the moment a request is sent. In open loop at most
// `concurrency` requests are in flight; arrivals beyond that queue in the bench (their
// queueing delay is not part of the latencies). No new request starts after
// duration_seconds; requests in flight then may finish for drain_timeout_seconds more, then
// are cancelled (error kind "cancelled"), as they are at once when BenchOptions::cancel turns
// true. A closed-loop client waits 50 ms after a failed
// request before its next one, so that a server refusing connections is not hammered.
//
// Threads: one per client (closed loop: `concurrency`; open loop: started as arrivals need
// them, up to `concurrency`), plus one that prints progress and enforces the drain timeout.
// All are joined before RunBench returns.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "core/result.h"
#include "loadgen/completion_client.h"
#include "loadgen/latency_summary.h"
#include "loadgen/workload.h"

namespace gpuscale::loadgen {

struct BenchOptions {
  std::string url;               // base URL, e.g. http://127.0.0.1:8000 (ParseServerUrl)
  std::string model;             // empty: the first model GET /v1/models lists
  WorkloadSpec workload;         // mode, lengths, seed, max_requests (duration is set from below)
  int32_t concurrency = 1;       // closed loop: clients; open loop: most in flight
  double duration_seconds = 10;  // how long new requests are started
  double drain_timeout_seconds = 30;  // how long requests in flight may run past the duration
  ClientOptions client;
  std::ostream* progress = nullptr;  // a progress line, rewritten in place; nullptr = none
  double progress_interval_seconds = 0.5;
  // When set and it turns true (e.g. the experiment was cancelled): no new request starts and
  // those in flight are cancelled (error kind "cancelled") within about 20 ms; RunBench then
  // returns the report of what ran so far. Not owned; must outlive RunBench.
  const std::atomic<bool>* cancel = nullptr;
};

// Errors: InvalidArgument naming the flag (--url, --concurrency, --duration,
// --drain-timeout, --request-timeout, or ValidateWorkloadSpec's).
Status ValidateBenchOptions(const BenchOptions& options);

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
};

// Runs the benchmark (blocks for about duration_seconds). Errors: InvalidArgument for bad
// options; Unavailable (field "--url") when no --model is given and the model list cannot be
// fetched. Failed requests are not errors: they are counted in the report.
Result<BenchReport> RunBench(const BenchOptions& options);

// Aggregates request outcomes into a report over `elapsed_seconds` (exposed for tests).
BenchReport Aggregate(const std::vector<RequestOutcome>& outcomes, double elapsed_seconds);

}  // namespace gpuscale::loadgen
