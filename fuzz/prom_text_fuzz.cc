// Fuzz target: the Prometheus text parser must never crash, hang or read out of bounds on
// arbitrary bytes (a replica's /metrics body is untrusted input), in both strict and
// skip-bad-lines modes; and anything it accepts must write back (ExpositionWriter) to text
// that it accepts again with the same number of samples.
//   build-asan/fuzz/prom_text_fuzz -max_total_time=600 fuzz/corpus/prom_text_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "metrics/exposition_writer.h"
#include "metrics/metric_lookup.h"
#include "metrics/prometheus_text_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscale::metrics;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto strict = ParsePrometheusText(text);
  auto lenient = ParsePrometheusText(text, ParseOptions{.skip_bad_lines = true});
  if (!lenient) std::abort();  // skip mode never fails as a whole
  if (strict && lenient->skipped_lines != 0) std::abort();
  if (!strict) return 0;
  for (const MetricFamily& family : strict->families) {
    (void)FindValue(*strict, family.name, {}, Combine::kSum);
    (void)FindHistogram(*strict, family.name);
  }
  auto again = ParsePrometheusText(WritePrometheusText(strict->families));
  if (!again || again->SampleCount() != strict->SampleCount()) std::abort();
  return 0;
}
