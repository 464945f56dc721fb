#include "cli/trace_file.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

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

}  // namespace gpuscale::cli
