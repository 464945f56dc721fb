// Simulation reports: request statistics (SLO attainment, latency percentiles) and pure
// renderers for the outputs `gpuscale simulate` writes: a text table, the per-tick timeline
// CSV and the --compare SVG chart. Pure: returns strings; the CLI does the I/O.
// Thread-safety: free functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/reactive_plan.h"
#include "sim/sim_replica.h"
#include "sim/simulation.h"
#include "sim/static_fleet.h"
#include "sim/static_mix.h"

namespace gpuscale::sim {

// A request meets the SLO when it finished, was not aborted, TTFT <= slo.ttft_seconds and,
// with more than one output token, (finish - first token) / (output tokens - 1) <=
// slo.tpot_seconds. The one definition of attainment (runs and the oracle's replays).
bool MeetsSlo(const RequestRecord& r, const SloSpec& slo);

// Requests still unfinished this long after the last arrival count as SLO misses (both the
// aggregated and the disaggregated engine stop there).
inline constexpr double kTailSeconds = 3600;

// Fills the request fields of `report` (requests, completed, slo_met, attainment,
// percentiles) from the request table and returns it; met as in MeetsSlo.
SimReport SummarizeRequests(const std::vector<RequestRecord>& requests, const SloSpec& slo,
                            SimReport report);

// Nearest-rank percentiles of `values` (reordered in place); zeros when empty.
// Per priority and per tenant (`tenant_names`: Trace::tenants): SimReport::priorities and
// ::tenants. Priorities without requests are left out; tenants only when a request has one.
void SummarizeClasses(const std::vector<RequestRecord>& requests, const SloSpec& slo,
                      const std::vector<std::string>& tenant_names, SimReport& report);

Percentiles ComputePercentiles(std::vector<double>& values);

// The oracle's plan (sim/oracle.h step 4): ready replicas per bucket of `bucket_s` seconds
// from t = 0, fractional where the plan mixes two fleet sizes within a bucket.
struct OraclePlan {
  double bucket_s = 60;
  std::vector<double> replicas;
};

// Where a run's fleet stands against the plan: its ready replicas at each tick against the
// plan's figure for the tick's bucket, each tick weighted by the time to the next one (the
// fleet holds still between ticks). "Above" is what a policy spends that the clairvoyant plan
// does not: headroom, scale-down delay, late scale-in; "below" is where it gambled.
struct PlanComparison {
  double plan_mean = 0, plan_min = 0, plan_max = 0;  // replicas, over the run's ticks
  double run_mean = 0;                               // ready replicas, over the same ticks
  double replica_hours_above = 0;                    // integral of max(0, ready - plan)
  double replica_hours_below = 0;                    // integral of max(0, plan - ready)
};
// Ticks past the plan's last bucket are left out; an empty timeline or plan gives zeros.
PlanComparison CompareWithPlan(const OraclePlan& plan, const std::vector<TimelineRow>& timeline);

// What runs are measured against: the oracle lower bound (sim/oracle.h), the reactive
// reference computed with it (sim/reactive_plan.h) and the smallest static fleet meeting the
// target (sim/static_fleet.h) with the static frontier it was found on. Any may be left out.
struct References {
  double oracle_gpu_hours = -1;  // < 0: not computed
  std::optional<StaticFleet> static_fleet;
  // The static fleets each run is judged against (JudgeAgainstFrontier): a dominated_by and
  // a cost_vs_static line per run, two columns of the compare table.
  std::optional<StaticFrontier> static_frontier = std::nullopt;
  double slo_target = -1;        // slo.target_ratio; < 0: no verdict line, no target in the SVG
  std::optional<OraclePlan> oracle_plan = std::nullopt;  // computed with the bound
  // From the bound's fleet curves (sim/reactive_plan.h).
  std::optional<ReactivePlan> reactive_plan = std::nullopt;
  // A service with variants: the cheapest static mix and each variant alone (sim/static_mix.h).
  std::optional<StaticMix> static_mix = std::nullopt;
};

// One run, human-readable (key: value lines), with a line per computed reference; given the
// run's timeline and the oracle's plan, a line comparing the two (CompareWithPlan).
std::string FormatReportTable(const SimReport& report, const References& references,
                              const std::vector<TimelineRow>& timeline = {});

// A run's timeline in at most `max_points` buckets of `bucket_s` seconds (whole seconds, at
// least 1) from t = 0, for charts (the JSON report's "timeline"; a day at 1-s ticks is 86,400
// rows). Per bucket holding ticks: its start, and the means over its ticks of the arrival
// rate, the replicas holding GPUs (ready + starting + draining, what GPU-hours count) and the
// ready ones. Buckets without a tick are left out, so `time_s` may skip.
struct TimelineSeries {
  double bucket_s = 1;
  std::vector<double> time_s, arrival_rate, replicas, ready;
};
TimelineSeries BucketTimeline(const std::vector<TimelineRow>& rows, size_t max_points);

// The timeline as CSV with a header row; numbers printed with fixed precision so equal runs
// give byte-identical files.
std::string FormatTimelineCsv(const std::vector<TimelineRow>& rows);

struct CompareEntry {
  std::string name;  // config/policy label
  SimReport report;
  std::vector<TimelineRow> timeline;
};

// A table with one row per policy: attainment, GPU-hours, GPU-hours / oracle, p99s, scale
// events and, given the static frontier, GPU-hours over the static fleet's and the fleet
// that dominates it; then a row per computed reference, the frontier and, given the SLO
// target, the verdict line.
std::string FormatCompareTable(const std::vector<CompareEntry>& entries,
                               const References& references);

// Which config to run: the cheapest one meeting the target, against the static fleet (is
// autoscaling worth it here?) and the reactive reference when it meets the target (how much
// could better reactions still save?); when none meets it, the best attainment, and the
// static fleet when it meets the target. One line, no trailing newline.
std::string CompareVerdict(const std::vector<CompareEntry>& entries, const References& references);

// Two SVG panels: GPU-hours vs SLO attainment (one point per policy, the oracle as a vertical
// line, the static fleet as a square, the reactive reference as a diamond, the SLO target as a horizontal line when known), and
// replicas over time per policy against the arrival rate and, when known, the oracle's plan
// (a dashed step line).
std::string RenderCompareSvg(const std::vector<CompareEntry>& entries,
                             const References& references);

}  // namespace gpuscale::sim
