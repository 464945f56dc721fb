// What `gpuscale simulate`'s files share (cli/simulate_commands.cc runs aggregated configs,
// cli/simulate_disagg.cc disaggregated ones): the flags and the trace and report helpers.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "config/sim_config.h"
#include "core/result.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace gpuscale::cli {

struct SimulateFlags {
  std::string config;
  std::string trace;
  std::string trace_format = "auto";
  double rate_scale = 1.0;
  double time_compress = 1.0;
  uint64_t seed = 1;
  bool seed_given = false;  // --seed was on the command line
  std::string rate_mode = "streams";
  double stream_shift_seconds = 300;
  std::string timeline;
  std::vector<std::string> compare;
  std::string svg = "sim-compare.svg";
  bool no_oracle = false;
  bool no_static_fleet = false;
  bool skip_bad_rows = false;
  OutputFormat output = OutputFormat::kTable;
};

// The calibrated replica model for a config (sim/replica_model.h), errors prefixed with the
// config section they come from.
Result<std::unique_ptr<sim::ReplicaModel>> BuildModel(const sim::ReplicaModelConfig& config);
Status WriteFile(const std::string& path, const std::string& text, std::string_view flag);
// "N bad rows skipped ...": the report's last line when rows were skipped.
std::string SkippedRowsLine(const sim::Trace& trace);
// The trace as replayed (format, requests, span, rate, mean lengths), one line.
std::string TraceLine(const sim::Trace& trace);
nlohmann::ordered_json TraceJson(const sim::Trace& trace);
nlohmann::ordered_json Percentiles(const sim::Percentiles& p);  // {p50, p90, p99}
// The report fields every run's JSON has, in their order: requests .. gpu_hours, and
// scale_ups .. controller_errors.
void AddRequestFields(nlohmann::ordered_json& j, const sim::SimReport& r, double slo_target);
void AddScaleFields(nlohmann::ordered_json& j, const sim::SimReport& r);
// The trace after --rate-scale, --rate-mode and --time-compress.
Result<sim::Trace> LoadTrace(const SimulateFlags& flags, std::ostream& err);

// Runs a disaggregated config (file.sim.disaggregated set) and prints its report: exit code.
int RunDisaggregated(const SimulateFlags& flags, const config::SimConfigFile& file,
                     const sim::Trace& trace, CommandContext& ctx);

}  // namespace gpuscale::cli
