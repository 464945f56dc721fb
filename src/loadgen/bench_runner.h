// RunBench: the load generator behind `gpuscale bench`. Sends streaming completions to an
// OpenAI-compatible server (the emulator, vLLM, SGLang, ...) for a fixed duration, closed
// loop (N concurrent clients) or open loop (Poisson arrivals or a replayed trace), and
// reports TTFT, inter-token latency, time per output token and end-to-end latency
// percentiles, throughput and errors by kind — the numbers llmperf and genai-bench report.
//
// Timing: every latency is measured from the moment a request is sent. In open loop at most
// `concurrency` requests are in flight; arrivals beyond that queue in the bench (their
// queueing delay is not part of the latencies; each outcome carries it, and the report counts
// the arrivals that queued). No new request starts after
// duration_seconds; requests in flight then may finish for drain_timeout_seconds more, then
// are cancelled (error kind "cancelled"), as they are at once when BenchOptions::cancel turns
// true. A closed-loop client waits 50 ms after a failed
// request before its next one, so that a server refusing connections is not hammered.
//
// Threads: one per client (closed loop: `concurrency`; open loop: started as arrivals need
// them, up to `concurrency`), plus one that prints progress and enforces the drain timeout.
// All are joined before RunBench returns.
//
// The options and the report are pure values declared in workload/ (bench_options.h,
// bench_report.h), so code that only builds or reads them needs no HTTP client.
#pragma once

#include "core/result.h"
#include "workload/bench_options.h"
#include "workload/bench_report.h"

namespace gpuscale::loadgen {

// Runs the benchmark (blocks for about duration_seconds). Errors: InvalidArgument for bad
// options (ValidateBenchOptions); Unavailable (field "--url") when no --model is given and the
// model list cannot be fetched. Failed requests are not errors: they are counted in the report.
Result<BenchReport> RunBench(const BenchOptions& options);

}  // namespace gpuscale::loadgen
