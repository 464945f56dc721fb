// What a benchmark run is asked to do (`gpuscale bench`, an experiment's bench phase) and its
// validation, apart from the runner: loadgen::RunBench takes these options, and code that
// only builds or checks them (task definitions, the CLI's flags) needs no HTTP client.
// Semantics of each field as RunBench applies them: loadgen/bench_runner.h.
//
// Thread-safety: plain values; `progress` and `cancel` are borrowed (see each).
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "core/result.h"
#include "workload/priority_report.h"
#include "workload/workload.h"

namespace gpuscale::loadgen {

// One client connection's limits (loadgen::CompletionClient).
struct ClientOptions {
  double connect_timeout_seconds = 5;
  double read_timeout_seconds = 60;  // longest silence allowed inside one response
  bool ignore_eos = false;           // send vLLM's ignore_eos so outputs reach max_tokens
  // Headers naming a request's priority and tenant, sent when the workload gives it one
  // (PlannedRequest); the gateway's admission.priority_header and .tenant_header.
  std::string priority_header = "x-gpuscale-priority";
  std::string tenant_header = "x-gpuscale-tenant";
};

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
  // true: the report keeps every request's outcome (BenchReport::outcomes), for callers that
  // judge requests one by one (`gpuscale profile`: TTFT and TPOT of the same request).
  bool keep_outcomes = false;
  // What BenchReport::priorities counts as completed within the SLO (0 = no bound).
  BenchSlo slo;
};

// Errors: InvalidArgument naming the flag (--url, --concurrency, --duration,
// --drain-timeout, --request-timeout, or ValidateWorkloadSpec's).
Status ValidateBenchOptions(const BenchOptions& options);

}  // namespace gpuscale::loadgen
