#include "cli/trace_file.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "workload/tenant_workload.h"

namespace gpuscale::cli {

Result<sim::Trace> ReadTraceFile(const std::string& path, const std::string& format_name,
                                 bool skip_bad_rows) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot open '{}'", path), "--trace");
  std::ostringstream text;
  text << in.rdbuf();
  // The parser names its own field ("format"); at the command line the user typed the flag.
  Result<sim::TraceFormat> format = sim::ParseTraceFormat(format_name);
  if (!format) {
    Error e = format.error();
    e.field = "--trace-format";
    return Unexpected<Error>(e);
  }
  auto trace = sim::ParseTrace(text.str(), {*format, skip_bad_rows});
  if (!trace) {
    Error e = trace.error();
    e.message = fmt::format("{}: {}{}{}", path, e.field.empty() ? "" : e.field + ": ", e.message,
                            e.field.starts_with("line ") ? " (or --skip-bad-rows to skip it)" : "");
    e.field = "--trace";
    return Unexpected<Error>(e);
  }
  return trace;
}

Result<sim::Trace> ReadOrGenerateTrace(const std::string& trace, const std::string& format_name,
                                       bool skip_bad_rows, uint64_t seed) {
  if (!trace.starts_with(kTenantWorkloadPrefix)) {
    return ReadTraceFile(trace, format_name, skip_bad_rows);
  }
  auto spec =
      loadgen::ParseTenantWorkload(std::string_view(trace).substr(kTenantWorkloadPrefix.size()));
  if (!spec) {
    return InvalidArgument(fmt::format("{}: {}", spec.error().field, spec.error().message),
                           "--trace");
  }
  spec->seed = seed;
  return loadgen::GenerateTenantTrace(*spec);
}

}  // namespace gpuscale::cli
