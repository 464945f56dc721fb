// What a benchmark run measured per priority class and tenant (issue 46, the overload
// experiment, scripts/bench-overload): for each priority the workload sent (its
// `x-gpuscale-priority` header), how many requests completed within the SLO, completed late,
// were shed with 429, or failed otherwise (a timeout, a 503, a broken stream), and per tenant
// how many completed, so that fair share can be judged from the client side. Pure.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "route/admission_queue.h"

namespace gpuscale::loadgen {

struct RequestOutcome;  // workload/bench_report.h, which includes this header

// The SLO a completion is judged by; a bound of 0 is no bound (so with neither set, every
// completion is within it).
struct BenchSlo {
  double ttft_seconds = 0;  // time to first token, seconds
  double tpot_seconds = 0;  // time per output token after the first, seconds
};

struct PriorityClassReport {
  std::optional<route::Priority> priority;  // nullopt: requests sent without one
  int64_t sent = 0;
  int64_t within_slo = 0;  // completed, TTFT and TPOT within the SLO
  int64_t late = 0;        // completed outside it
  int64_t shed = 0;        // answered 429 (the door's request_shed, or a token limit)
  int64_t failed = 0;      // any other error: timeouts, 5xx, broken streams, cancelled
  std::map<std::string, int64_t> completed_by_tenant;  // "" for requests without a tenant
};

// Whether a completed outcome met `slo`.
bool WithinSlo(const RequestOutcome& outcome, const BenchSlo& slo);

// One row per priority seen, critical first, then standard, sheddable and the requests
// without a priority. Empty when no outcome carries a priority or a tenant (a workload
// without classes has nothing to split).
std::vector<PriorityClassReport> ReportByPriority(const std::vector<RequestOutcome>& outcomes,
                                                  const BenchSlo& slo);

// "critical", "standard", "sheddable", or "none".
std::string_view PriorityClassName(const PriorityClassReport& row);

}  // namespace gpuscale::loadgen
