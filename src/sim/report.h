// Simulation reports: request statistics (SLO attainment, latency percentiles) and pure
// renderers for the outputs `gpuscale simulate` writes: a text table, the per-tick timeline
// CSV and the --compare SVG chart. Pure: returns strings; the CLI does the I/O.
// Thread-safety: free functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/sim_replica.h"
#include "sim/simulation.h"
#include "sim/static_fleet.h"

namespace gpuscale::sim {

// A request meets the SLO when it finished, was not aborted, TTFT <= slo.ttft_seconds and,
// with more than one output token, (finish - first token) / (output tokens - 1) <=
// slo.tpot_seconds. The one definition of attainment (runs and the oracle's replays).
bool MeetsSlo(const RequestRecord& r, const SloSpec& slo);

// Fills the request fields of `report` (requests, completed, slo_met, attainment,
// percentiles) from the request table and returns it; met as in MeetsSlo.
SimReport SummarizeRequests(const std::vector<RequestRecord>& requests, const SloSpec& slo,
                            SimReport report);

// Nearest-rank percentiles of `values` (reordered in place); zeros when empty.
Percentiles ComputePercentiles(std::vector<double>& values);

// What runs are measured against: the oracle lower bound (sim/oracle.h) and the smallest
// static fleet meeting the target (sim/static_fleet.h). Either may be left out.
struct References {
  double oracle_gpu_hours = -1;  // < 0: not computed
  std::optional<StaticFleet> static_fleet;
  double slo_target = -1;        // slo.target_ratio; < 0: no verdict line, no target in the SVG
};

// One run, human-readable (key: value lines), with a line per computed reference.
std::string FormatReportTable(const SimReport& report, const References& references);

// The timeline as CSV with a header row; numbers printed with fixed precision so equal runs
// give byte-identical files.
std::string FormatTimelineCsv(const std::vector<TimelineRow>& rows);

struct CompareEntry {
  std::string name;  // config/policy label
  SimReport report;
  std::vector<TimelineRow> timeline;
};

// A table with one row per policy: attainment, GPU-hours, GPU-hours / oracle, p99s, scale
// events; then a row per computed reference and, given the SLO target, the verdict line.
std::string FormatCompareTable(const std::vector<CompareEntry>& entries,
                               const References& references);

// Which config to run: the cheapest one meeting the target, against the static fleet (is
// autoscaling worth it here?); when none meets it, the best attainment, and the static
// fleet when it meets the target. One line, no trailing newline.
std::string CompareVerdict(const std::vector<CompareEntry>& entries, const References& references);

// Two SVG panels: GPU-hours vs SLO attainment (one point per policy, the oracle as a vertical
// line, the static fleet as a square, the SLO target as a horizontal line when known), and
// replicas over time per policy against the arrival rate.
std::string RenderCompareSvg(const std::vector<CompareEntry>& entries,
                             const References& references);

}  // namespace gpuscale::sim
