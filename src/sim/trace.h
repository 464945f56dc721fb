// LLM request traces for the simulator: readers for the Azure CSV, Mooncake JSONL and a
// plain CSV/JSONL format, plus rate scaling (sub-sample or replicate with a seed) and time
// compression. Pure parsing: readers take text, not paths (the CLI reads the file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpuscale::sim {

struct TraceRequest {
  double arrival_s = 0;  // seconds since the first request of the trace
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
};

enum class TraceFormat { kAuto, kAzureCsv, kMooncakeJsonl, kPlainCsv, kPlainJsonl };

struct TraceReadOptions {
  TraceFormat format = TraceFormat::kAuto;
  // false: the first bad row is an error naming its line. true: bad rows are skipped and
  // counted in Trace::skipped_rows.
  bool skip_bad_rows = false;
};

struct Trace {
  std::vector<TraceRequest> requests;  // sorted by arrival_s
  int64_t skipped_rows = 0;
  std::string format;  // detected format name
};

Result<Trace> ParseTrace(std::string_view text, const TraceReadOptions& options);

struct TraceTransform {
  // Multiply the arrival rate: < 1 sub-samples, > 1 replicates each request (copies jittered
  // within the gap to the next request, deterministically from seed). 1 keeps the trace.
  double rate_scale = 1.0;
  // Divide every arrival time (2 = the trace plays twice as fast). 1 keeps it.
  double time_compress = 1.0;
  uint64_t seed = 1;
};

Trace TransformTrace(const Trace& trace, const TraceTransform& transform);

}  // namespace gpuscale::sim
