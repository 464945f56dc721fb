// WorkloadGenerator: the sequence of requests `gpuscale bench` sends — when each is due and
// how many input/output tokens it asks for — for the three ways of loading a server:
//   kClosedLoop: N clients each send their next request when the previous one ends
//                (llmperf's --num-concurrent-requests); send_at_seconds is 0 for all.
//   kPoisson:    open loop, exponential gaps at rate_per_second (genai-bench / vLLM's
//                benchmark_serving --request-rate).
//   kTrace:      open loop, arrivals and lengths replayed from a trace (sim::ParseTrace).
//                A trace whose requests carry prompt block hashes (Mooncake's hash_ids, the
//                multi-tenant workload's) is sent with prompt text built from them
//                (PromptText in tenant_workload.h), so requests that share leading blocks
//                share leading text, and a prefix cache sees live the sharing the trace
//                records.
// Lengths for the first two are drawn from a normal distribution (mean, stddev) rounded and
// clamped to >= 1, as llmperf's --mean-input-tokens/--stddev-input-tokens. Draws come from
// the generator's own PRNG, so a seed gives the same workload on every platform.
//
// Ownership and thread-safety: owns a copy of the trace; not synchronised (the bench runner
// calls Next() under its mutex).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "sim/trace.h"

namespace gpuscale::loadgen {

enum class ArrivalMode { kClosedLoop, kPoisson, kTrace };

struct LengthDistribution {
  int32_t mean_tokens = 128;
  double stddev_tokens = 0;  // 0 = every request has exactly mean_tokens
};

struct WorkloadSpec {
  ArrivalMode mode = ArrivalMode::kClosedLoop;
  double rate_per_second = 1;  // kPoisson only
  LengthDistribution input{128, 0};
  LengthDistribution output{128, 0};
  std::vector<sim::TraceRequest> trace;  // kTrace only, sorted by arrival_s
  // kTrace only: sim::Trace::hash_ids and hash_block_tokens, which the rows' hash_begin and
  // hash_count index; empty (or 0 tokens a block) when the trace has no block hashes.
  std::vector<uint64_t> trace_hash_ids;
  int32_t trace_hash_block_tokens = 0;
  // kTrace only: sim::Trace::tenants, which the rows' `tenant` indexes ([0] = "": none).
  std::vector<std::string> trace_tenants = {""};
  uint64_t seed = 1;
  // Open loop: requests due at or after this many seconds are not generated. 0 = no limit.
  double duration_seconds = 0;
  int64_t max_requests = 0;  // stop after this many requests; 0 = no limit
};

// Errors: InvalidArgument naming the `gpuscale bench` flag (--rate, --input-tokens,
// --output-tokens, --input-stddev, --output-stddev, --trace, --max-requests) and what was
// expected; a trace row whose hash ids lie outside trace_hash_ids is an error (--trace).
Status ValidateWorkloadSpec(const WorkloadSpec& spec);

struct PlannedRequest {
  int64_t index = 0;           // 0, 1, 2, ... in generation order
  double send_at_seconds = 0;  // since the start of the run (open loop); 0 in closed loop
  int32_t input_tokens = 1;
  int32_t output_tokens = 1;
  // The prompt to send; empty: any text of input_tokens words (the client's PromptText).
  // Set for a trace row with block hashes: input_tokens words, the first ones those of its
  // blocks.
  std::string prompt = {};
  // A trace row's priority and tenant (sent as headers: ClientOptions); nullopt and "" when
  // the row has none, and for the other modes.
  std::optional<route::Priority> priority = std::nullopt;
  std::string tenant = {};
};

class WorkloadGenerator {
 public:
  // REQUIRES: ValidateWorkloadSpec(spec) is ok.
  explicit WorkloadGenerator(WorkloadSpec spec);

  // The next request, or nullopt when the workload is exhausted (max_requests reached, trace
  // ended, or the next arrival is past duration_seconds).
  std::optional<PlannedRequest> Next();

 private:
  double NextUniform();  // in (0, 1)
  int32_t DrawLength(const LengthDistribution& distribution);

  WorkloadSpec spec_;
  uint64_t state_;  // splitmix64
  int64_t generated_ = 0;
  double clock_seconds_ = 0;  // last Poisson arrival
};

}  // namespace gpuscale::loadgen
