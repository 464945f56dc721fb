// Reads the --trace FILE that `gpuscale simulate` and `gpuscale bench` replay, so that both
// report an unreadable file or a bad row the same way.
#pragma once

#include <string>

#include "core/result.h"
#include "sim/trace.h"

namespace gpuscale::cli {

// Reads and parses `path` in the named format (--trace-format: auto, azure_csv, ...), skipping
// and counting bad rows when skip_bad_rows. Errors: NotFound (field "--trace") when the file
// cannot be opened; InvalidArgument (field "--trace", message starting with the path) for a
// bad row, naming its line and column and pointing to --skip-bad-rows; InvalidArgument
// (field "--trace-format") for an unknown format name, with sim::ParseTraceFormat's message.
Result<sim::Trace> ReadTraceFile(const std::string& path, const std::string& format_name,
                                 bool skip_bad_rows);

}  // namespace gpuscale::cli
