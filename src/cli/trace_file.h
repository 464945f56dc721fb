// Reads the --trace FILE that `gpuscale simulate` and `gpuscale bench` replay, so that both
// report an unreadable file or a bad row the same way, or generates the multi-tenant workload
// that `--trace tenants:KEY=VALUE,...` names, so that both replay the same one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// `--trace tenants:KEY=VALUE,...`: the multi-tenant workload (workload/tenant_workload.h).
inline constexpr std::string_view kTenantWorkloadPrefix = "tenants:";

// `trace` after kTenantWorkloadPrefix: loadgen::GenerateTenantTrace of the parsed spec with
// `seed`; else ReadTraceFile(trace, format_name, skip_bad_rows). Errors: ReadTraceFile's, or
// InvalidArgument (field "--trace", message "<key>: <what was expected>") for a bad spec.
Result<sim::Trace> ReadOrGenerateTrace(const std::string& trace, const std::string& format_name,
                                       bool skip_bad_rows, uint64_t seed);

}  // namespace gpuscale::cli
