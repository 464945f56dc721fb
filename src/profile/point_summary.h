// From requests measured at one load level to a CurvePoint (attainment, TTFT and TPOT
// percentiles), the same way for the simulated replica and for a live endpoint, so that a
// simulator profile and an endpoint profile mean the same by "within the SLO".
//
// A request meets the SLO when it completed, its TTFT <= slo.ttft_seconds and, with two
// output tokens or more, its time per output token after the first, (end - first token) /
// (output tokens - 1), <= slo.tpot_seconds: sim::MeetsSlo's definition, which the
// simulator's reports and oracle use. A request that failed (connection error, HTTP error,
// cut off) counts as a miss.
//
// Pure; thread-safety: free functions over values.
#pragma once

#include <vector>

#include "profile/capacity_profile.h"
#include "sim/simulation.h"
#include "workload/bench_report.h"

namespace gpuscale::profile {

struct RequestLatency {
  bool completed = false;
  double ttft_seconds = 0;
  double tpot_seconds = -1;  // < 0: fewer than two output tokens (no TPOT)
};

// attainment = requests meeting the SLO / all of `requests` (0 when empty); percentiles
// (nearest rank) over the completed ones.
CurvePoint SummarizePoint(double rate_rps, const std::vector<RequestLatency>& requests,
                          const sim::SloSpec& slo);

// The bench client's outcomes as RequestLatency (failed requests: not completed). TTFT counts
// from each arrival's due time, so an arrival held in the client for a free slot
// (RequestOutcome::queued_seconds) waited for its first token as a user would have; TPOT is
// the replica's alone.
std::vector<RequestLatency> LatenciesOf(const std::vector<loadgen::RequestOutcome>& outcomes);

}  // namespace gpuscale::profile
