// Step 3 of the oracle bound (sim/oracle.h): how many violations a fleet of n replicas
// leaves in each bucket.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "sim/oracle.h"
#include "sim/report.h"
#include "sim/sim_replica.h"
#include "sim/static_mix.h"

namespace gpuscale::sim {
namespace {

// Requests before a bucket that are replayed (not scored) so that its fleet starts with the
// queues and batches it would have, not empty.
constexpr double kWarmupSeconds = 30;

}  // namespace

int FleetViolations(const ReplicaModel& model, const std::vector<TraceRequest>& requests,
                    size_t first_scored, int replicas, route::PickerKind router,
                    const SloSpec& slo) {
  const std::vector<MixedReplica> fleet(static_cast<size_t>(std::max(replicas, 1)),
                                        MixedReplica{&model, 1});
  const std::vector<RequestRecord> records = ReplayOnFleet(fleet, requests, router);
  int violations = 0;
  for (size_t i = first_scored; i < records.size(); ++i) violations += !MeetsSlo(records[i], slo);
  return violations;
}

std::vector<FleetCurve> FleetCurves(const SimulationConfig& config, const ReplicaModel& model,
                                    const Trace& trace, const std::vector<double>& start_need,
                                    double bucket_s, double end_s, double allowed_violations,
                                    const OracleProgress& progress,
                                    const OracleParallelFor& parallel_for) {
  const size_t buckets = start_need.size();
  const auto& requests = trace.requests;
  const int min_n = std::max(config.service.min_replicas, 1);
  const int max_n = std::max(config.FleetCeiling(), min_n);
  auto first_at = [&](double t) {
    return static_cast<size_t>(
        std::lower_bound(requests.begin(), requests.end(), t,
                         [](const TraceRequest& r, double v) { return r.arrival_s < v; }) -
        requests.begin());
  };
  std::vector<FleetCurve> curves(buckets);
  auto evaluate = [&](size_t b) {
    FleetCurve& c = curves[b];
    const double start = static_cast<double>(b) * bucket_s;
    c.len = std::min(bucket_s, end_s - start);
    const size_t warm = first_at(start - kWarmupSeconds), s0 = first_at(start);
    const size_t s1 = b + 1 == buckets ? requests.size() : first_at(start + bucket_s);
    c.scored = static_cast<int>(s1 - s0);
    if (c.scored == 0) {
      c.n_low = min_n;
      c.violations = {0};
      return;
    }
    const std::vector<TraceRequest> slice(requests.begin() + static_cast<long>(warm),
                                          requests.begin() + static_cast<long>(s1));
    auto violations = [&](int n) {
      return FleetViolations(model, slice, s0 - warm, n, config.router.kind, config.slo);
    };
    // From the capacity estimate up to the first fleet without violations, then down while
    // a smaller fleet could still fit the budget.
    const int n0 = std::clamp(static_cast<int>(std::ceil(start_need[b])), min_n, max_n);
    std::vector<int> up{violations(n0)};
    for (int n = n0 + 1; up.back() > 0 && n <= max_n; ++n) up.push_back(violations(n));
    std::vector<int> down;
    for (int n = n0 - 1, last = up.front();
         n >= min_n && last <= allowed_violations && last < c.scored; --n) {
      down.push_back(last = violations(n));
    }
    c.n_low = n0 - static_cast<int>(down.size());
    c.violations.assign(down.rbegin(), down.rend());
    c.violations.insert(c.violations.end(), up.begin(), up.end());
  };
  // Buckets are independent: the caller may run them at once (OracleParallelFor).
  std::atomic<size_t> done{0};
  auto run_bucket = [&](size_t b) {
    evaluate(b);
    const size_t n = done.fetch_add(1) + 1;
    if (progress && (n == buckets || (n * 10) / buckets != ((n - 1) * 10) / buckets)) {
      progress(static_cast<double>(n) / static_cast<double>(buckets));
    }
  };
  if (parallel_for) {
    parallel_for(buckets, run_bucket);
  } else {
    for (size_t b = 0; b < buckets; ++b) run_bucket(b);
  }
  return curves;
}

}  // namespace gpuscale::sim
