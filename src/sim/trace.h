// LLM request traces for the simulator: readers for the Azure CSV, Mooncake JSONL and a
// plain CSV/JSONL format, plus rate scaling (sub-sample or replicate with a seed) and time
// compression. Pure parsing: readers take text, not paths (the CLI reads the file).
// Thread-safety: free functions over values; safe to call from several threads at once.
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

// Parses a whole trace file's text. The format is detected from the header / first line when
// options.format is kAuto. Blank lines are ignored; CRLF line ends and a missing final newline
// are accepted. Errors: InvalidArgument with field "line N" and a message naming the column
// and what was expected (e.g. field "line 17", message "ContextTokens: expected a
// non-negative integer, got 'x'"); with skip_bad_rows only an unreadable header is an error.
Result<Trace> ParseTrace(std::string_view text, const TraceReadOptions& options);

// Plain formats defined by gpuscale (one request a line, arrival in seconds from any origin):
//   CSV:   header `arrival_s,input_tokens,output_tokens`, then e.g. `0.25,512,128`
//   JSONL: {"arrival_s": 0.25, "input_tokens": 512, "output_tokens": 128}
// Extra CSV columns / JSON keys are ignored.
inline constexpr std::string_view kPlainCsvHeader = "arrival_s,input_tokens,output_tokens";

// "azure_csv", "mooncake_jsonl", "plain_csv", "plain_jsonl" ("auto" for kAuto); the same
// names Trace::format reports and ParseTraceFormat accepts.
std::string_view TraceFormatName(TraceFormat format);
// Inverse of TraceFormatName (for a --format flag). Errors: InvalidArgument listing the names.
Result<TraceFormat> ParseTraceFormat(std::string_view name);

struct TraceTransform {
  // Multiply the arrival rate: < 1 sub-samples, > 1 replicates each request (copies jittered
  // within the gap to the next request, deterministically from seed). 1 keeps the trace.
  double rate_scale = 1.0;
  // Divide every arrival time (2 = the trace plays twice as fast). 1 keeps it.
  double time_compress = 1.0;
  uint64_t seed = 1;
};

// Sorts by arrival (stable: equal times keep their order) and re-bases the times so that the
// first request arrives at 0. ParseTrace and TransformTrace return traces in this form.
void SortAndRebase(std::vector<TraceRequest>* requests);

// Errors: InvalidArgument naming the field when rate_scale is not in (0, 10000] or
// time_compress is not in (0, 1e6] (or either is not finite).
Status ValidateTraceTransform(const TraceTransform& transform);

// Applies rate scaling, then time compression; the result is sorted and re-based so that its
// first request arrives at 0. Deterministic for a given seed on every platform (own PRNG).
// REQUIRES: ValidateTraceTransform(transform) is ok; an invalid field is treated as 1.
Trace TransformTrace(const Trace& trace, const TraceTransform& transform);

}  // namespace gpuscale::sim
