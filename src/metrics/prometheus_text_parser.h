// Parser for the Prometheus text exposition format 0.0.4, which vLLM, SGLang, TGI and
// node/DCGM exporters serve on /metrics. Input: the response body; output: metric families
// with their samples (metric_family.h).
//
// Why hand-written rather than a library: no maintained C++ parser of this format is packaged
// in Debian 12 (prometheus-cpp only writes it), and the daemon parses thousands of scrapes per
// control tick, so the parser is a single pass over std::string_view with std::from_chars and
// no regex or stream machinery.
//
// Accepted: `# HELP` (escapes \\ and \n), `# TYPE` (counter, gauge, histogram, summary,
// untyped), other `#` comments, blank lines, samples `name{label="value",...} value [ts]` with
// label value escapes \\ \" \n, a trailing comma in the label set, values NaN / +Inf / -Inf /
// any decimal or exponent float, integer millisecond timestamps, spaces or tabs between
// tokens, CRLF line ends, metric names with colons. Samples are grouped into the family
// declared by `# TYPE` (histogram: _bucket/_sum/_count; summary: _sum/_count; counter: the name
// or name_total); a sample without a declared family gets its own untyped family.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "metrics/metric_family.h"

namespace gpuscale::metrics {

struct ParseOptions {
  // false (default): the first malformed line fails the whole parse. true: malformed lines
  // are skipped and counted, so that one broken line in a replica's exposition does not hide
  // all its other metrics from the autoscaler.
  bool skip_bad_lines = false;
  // How many skipped-line errors to keep in Exposition::line_errors (for logs); default 8.
  size_t max_kept_errors = 8;
  // When set, only these families are kept: HELP, TYPE and sample lines of any other family
  // are passed over unparsed (and so unchecked), which is most of a vLLM exposition when a
  // reader needs a dozen families. A sample belongs to a listed family when its name is the
  // family's, or is it plus _bucket, _sum, _count, _total or _created. The set must outlive
  // the parse.
  const std::set<std::string, std::less<>>* only_families = nullptr;
};

struct Exposition {
  std::vector<MetricFamily> families;  // in order of first appearance
  int64_t skipped_lines = 0;           // malformed lines skipped (skip_bad_lines only)
  std::vector<Error> line_errors;      // the first max_kept_errors of them

  // The family named exactly `name` (the `# TYPE` name), or nullptr.
  const MetricFamily* FindFamily(std::string_view name) const;
  size_t SampleCount() const;
};

// Parses a whole exposition. Errors: InvalidArgument with field "line N" and a message naming
// what was expected, e.g. "line 12: expected '=' after label name 'model'" (ToString()), unless
// options.skip_bad_lines. Never crashes on arbitrary bytes (fuzzed: fuzz/prom_text_fuzz.cc).
Result<Exposition> ParsePrometheusText(std::string_view text, const ParseOptions& options = {});

// Parses one sample value token as the format allows: a float, "NaN", "+Inf", "-Inf" (case
// insensitive, as Go's strconv.ParseFloat). Errors: InvalidArgument naming the token.
Result<double> ParsePrometheusValue(std::string_view token);

}  // namespace gpuscale::metrics
