// Fuzz target for the trace readers: ParseTrace must never crash, hang or read out of bounds
// on arbitrary bytes (trace files come from users), in strict and skip-bad-rows modes, with
// format detection and with each explicit format. Anything it accepts must keep the
// reader's promises: sorted by arrival, first arrival 0, finite times, non-negative tokens;
// every strict-mode error names its line. Accepted traces also go through TransformTrace.
//   build-asan/fuzz/trace_fuzz -max_total_time=600 fuzz/corpus/trace_fuzz
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/trace.h"

namespace {

using gpuscale::sim::Trace;
using gpuscale::sim::TraceFormat;

void CheckTrace(const Trace& trace) {
  double previous = 0;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const auto& r = trace.requests[i];
    if (!std::isfinite(r.arrival_s) || r.arrival_s < previous) std::abort();
    if (i == 0 && r.arrival_s != 0) std::abort();
    if (r.input_tokens < 0 || r.output_tokens < 0) std::abort();
    previous = r.arrival_s;
  }
  if (trace.skipped_rows < 0 || trace.format.empty()) std::abort();
  // The first skipped row's reason names its line, exactly when a row was skipped.
  if ((trace.skipped_rows > 0) != trace.first_skipped_row.starts_with("line ")) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const TraceFormat explicit_format = static_cast<TraceFormat>(size % 5);
  for (TraceFormat format : {TraceFormat::kAuto, explicit_format}) {
    for (bool skip : {false, true}) {
      auto trace = gpuscale::sim::ParseTrace(text, {format, skip});
      if (!trace) {
        if (trace.error().field.rfind("line ", 0) != 0) std::abort();
        continue;
      }
      CheckTrace(*trace);
      if (trace->requests.size() <= 4096) {
        using gpuscale::sim::RateScaleMode;
        CheckTrace(gpuscale::sim::TransformTrace(
            *trace, {.rate_scale = 2.5,
                     .time_compress = 3,
                     .seed = size,
                     .mode = size % 2 ? RateScaleMode::kReplicate : RateScaleMode::kStreams,
                     .stream_shift_seconds = 1.0 + static_cast<double>(size % 600)}));
      }
    }
  }
  return 0;
}
