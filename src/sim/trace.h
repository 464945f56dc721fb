// LLM request traces for the simulator: readers for the Azure CSV, Mooncake JSONL and a
// plain CSV/JSONL format, plus rate scaling (sub-sample or replicate with a seed) and time
// compression. Pure parsing: readers take text, not paths (the CLI reads the file).
// Thread-safety: free functions over values; safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "route/admission_queue.h"

namespace gpuscale::sim {

struct TraceRequest {
  double arrival_s = 0;  // seconds since the first request of the trace
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  // The request's prompt block hashes: Trace::hash_ids[hash_begin, hash_begin + hash_count)
  // (none when hash_count is 0). One flat list for the trace keeps a request at 32 bytes.
  uint32_t hash_begin = 0;
  uint32_t hash_count = 0;
  // Trace::tenants[tenant]: 0 is "" (no tenant column; one tenant for the whole trace).
  uint32_t tenant = 0;
  // The row's priority column; nullopt without one (the door's default_priority applies).
  std::optional<route::Priority> priority = std::nullopt;
};

enum class TraceFormat { kAuto, kAzureCsv, kMooncakeJsonl, kPlainCsv, kPlainJsonl };

struct TraceReadOptions {
  TraceFormat format = TraceFormat::kAuto;
  // false: the first bad row is an error naming its line. true: bad rows are skipped and
  // counted in Trace::skipped_rows.
  bool skip_bad_rows = false;
  // Tokens per block of the trace's block hashes (Mooncake's hash_ids); 0: the format's own
  // (512 for Mooncake). Only traces with block hashes use it.
  int32_t hash_block_tokens = 0;
};

struct Trace {
  std::vector<TraceRequest> requests;  // sorted by arrival_s
  int64_t skipped_rows = 0;
  // Why the first skipped row was bad, as "line N: <message>" (empty when none was skipped):
  // the skip count alone would hide a wrong --trace-format that skips every row.
  std::string first_skipped_row;
  std::string format;  // detected format name
  // Prompt block hashes of every request, in file order (TraceRequest::hash_begin): Mooncake's
  // hash_ids, one per block of hash_block_tokens tokens, the last block possibly partial. A
  // hash stands for its block given the blocks before it. Empty for formats without them.
  std::vector<uint64_t> hash_ids;
  int32_t hash_block_tokens = 0;  // 0 when the format carries no block hashes
  // Tenant names (the `tenant` column), first seen first; [0] is "" (a row without one).
  std::vector<std::string> tenants = {""};

  std::span<const uint64_t> HashIds(const TraceRequest& request) const {
    return std::span<const uint64_t>(hash_ids).subspan(request.hash_begin, request.hash_count);
  }
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
// Optional in every format with named fields (both plain ones, Mooncake's JSONL, the Azure
// CSV's header): `priority` (critical, standard or sheddable; another value is an error
// naming the column and line) and `tenant` (any text; a JSON number is read as its text).
// Other extra CSV columns / JSON keys are ignored.
inline constexpr std::string_view kPlainCsvHeader = "arrival_s,input_tokens,output_tokens";

// "azure_csv", "mooncake_jsonl", "plain_csv", "plain_jsonl" ("auto" for kAuto); the same
// names Trace::format reports and ParseTraceFormat accepts.
std::string_view TraceFormatName(TraceFormat format);
// Inverse of TraceFormatName (for a --format flag). Errors: InvalidArgument listing the names.
Result<TraceFormat> ParseTraceFormat(std::string_view name);

// How rate_scale > 1 multiplies the traffic.
enum class RateScaleMode {
  // k independent copies of the trace's user population: copy 0 is the trace itself, every
  // further copy is the whole trace shifted by its own offset, uniform in
  // [-stream_shift_seconds, +stream_shift_seconds] and wrapped around the trace's span. The
  // load's shape at time scales above the shift (the hour's trend) is multiplied by k, while
  // the fluctuations below it (Poisson noise, a client's burst) add up as independent
  // streams do: a burst of the trace stays a burst of the same size, k times at different
  // moments. This is what k times as many users of the same kind produce.
  kStreams,
  // Every request is repeated k times inside the gap to the next one: every fluctuation of
  // the trace, down to single seconds, is multiplied by k (a 10 s burst of 300 requests
  // becomes one of 12,000 at x40). A worst case: it treats the trace's noise as demand that
  // all users share.
  kReplicate,
};

// What a trace replays, for the report's first line: a wrong --rate-scale or
// --time-compress shows as a rate or span nobody expected.
struct TraceStats {
  int64_t requests = 0;
  double span_s = 0;             // last arrival (the first is at 0)
  double rate_per_s = 0;         // requests / span; 0 for a single instant
  double mean_input_tokens = 0;  // 0 without requests
  double mean_output_tokens = 0;
};
TraceStats SummarizeTrace(const Trace& trace);

// "streams" / "replicate" (the names a --rate-mode flag takes); the inverse errors with
// InvalidArgument listing the names.
std::string_view RateScaleModeName(RateScaleMode mode);
Result<RateScaleMode> ParseRateScaleMode(std::string_view name);

struct TraceTransform {
  // Multiply the arrival rate: < 1 sub-samples (Bernoulli, both modes), > 1 adds copies as
  // `mode` says, deterministically from seed. 1 keeps the trace.
  double rate_scale = 1.0;
  // Divide every arrival time (2 = the trace plays twice as fast). 1 keeps it.
  double time_compress = 1.0;
  uint64_t seed = 1;
  RateScaleMode mode = RateScaleMode::kStreams;
  // kStreams: the largest shift of a copy (seconds of the original trace, before
  // time_compress). 300 s keeps the trend of an hour-long trace and decorrelates bursts of up
  // to a few minutes.
  double stream_shift_seconds = 300;
};

// Sorts by arrival (stable: equal times keep their order) and re-bases the times so that the
// first request arrives at 0. ParseTrace and TransformTrace return traces in this form.
void SortAndRebase(std::vector<TraceRequest>* requests);

// Errors: InvalidArgument naming the field when rate_scale is not in (0, 10000],
// time_compress is not in (0, 1e6] or stream_shift_seconds is not in (0, 1e9] (or any of them
// is not finite).
Status ValidateTraceTransform(const TraceTransform& transform);

// Applies rate scaling, then time compression; the result is sorted and re-based so that its
// first request arrives at 0. Deterministic for a given seed on every platform (own PRNG).
// REQUIRES: ValidateTraceTransform(transform) is ok; an invalid field is treated as 1.
Trace TransformTrace(const Trace& trace, const TraceTransform& transform);

}  // namespace gpuscale::sim
