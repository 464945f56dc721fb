#include "sim/oracle.h"

#include <algorithm>
#include <cmath>

namespace gpuscale::sim {
namespace {

// Requests per calibration run: enough for a stable 1 % tail, cheap to bisect over.
constexpr size_t kCalibrationRequests = 20000;
constexpr int kBisectionSteps = 14;

}  // namespace

// Layer-cake: the cost is an integral over levels y of the cost of the buckets with
// need_b >= y, which is constant between consecutive distinct values of need; so the optimum
// is exact, in O(levels x buckets).
double StartReplicaSeconds(const std::vector<double>& need, const std::vector<double>& len,
                           double initial, double cold_start_s) {
  if (cold_start_s <= 0) return 0;
  std::vector<double> levels = need;
  levels.push_back(0);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  double total = 0;
  for (size_t k = 1; k < levels.size(); ++k) {
    const double y = levels[k];
    const double thickness = y - levels[k - 1];
    // Ready replicas at this level at t = 0 (a part of the layer when `initial` cuts it).
    const double live_share = std::clamp((initial - levels[k - 1]) / thickness, 0.0, 1.0);
    double t = 0, covered_end = -1, live_cost = 0, cold_cost = 0;
    for (size_t b = 0; b < need.size(); t += len[b], ++b) {
      if (need[b] < y) continue;
      if (covered_end < 0) {  // the first needed bucket at this level
        live_cost = std::min(t, cold_start_s);
        cold_cost = cold_start_s;
      } else if (t > covered_end) {
        live_cost += std::min(t - covered_end, cold_start_s);
        cold_cost += std::min(t - covered_end, cold_start_s);
      }
      covered_end = t + len[b];
    }
    total += thickness * (live_share * live_cost + (1 - live_share) * cold_cost);
  }
  return total;
}

WorkWeights ComputeWorkWeights(const ReplicaModel& model, const Trace& trace) {
  double chunk = std::max(model.MaxBatchedTokens(), 1);
  double context = 0;
  for (const auto& r : trace.requests) context += r.input_tokens + r.output_tokens / 2.0;
  context /= std::max<size_t>(trace.requests.size(), 1);
  constexpr int kBatch = 64;
  WorkWeights w;
  w.per_input_token = model.PrefillSeconds(static_cast<int64_t>(chunk)) / chunk;
  w.per_output_token =
      model.DecodeStepSeconds(kBatch, static_cast<int64_t>(kBatch * context)) / kBatch;
  return w;
}

double FleetAttainment(const ReplicaModel& model, const std::vector<TraceRequest>& requests,
                       int replicas, route::PickerKind router, const SloSpec& slo) {
  if (requests.empty()) return 0;
  const int violations = FleetViolations(model, requests, 0, replicas, router, slo);
  return 1 - static_cast<double>(violations) / static_cast<double>(requests.size());
}

double SingleReplicaAttainment(const ReplicaModel& model,
                               const std::vector<TraceRequest>& requests, const SloSpec& slo) {
  return FleetAttainment(model, requests, 1, route::PickerKind::kLeastOutstanding, slo);
}

Result<OracleBound> ComputeOracleBound(const SimulationConfig& config, const ReplicaModel& model,
                                       const Trace& given, double end_s,
                                       const OracleProgress& progress,
                                       const OracleParallelFor& parallel_for) {
  if (given.requests.empty()) return InvalidArgument("the trace has no requests", "trace");
  if (!(end_s > 0)) return InvalidArgument("must be > 0", "end_s");
  auto by_arrival = [](const TraceRequest& a, const TraceRequest& b) {
    return a.arrival_s < b.arrival_s;
  };
  Trace sorted;  // the fleet replays (step 3) need arrival order; loaded traces have it
  if (!std::is_sorted(given.requests.begin(), given.requests.end(), by_arrival)) {
    sorted = given;
    std::stable_sort(sorted.requests.begin(), sorted.requests.end(), by_arrival);
  }
  const Trace& trace = sorted.requests.empty() ? given : sorted;
  WorkWeights w = ComputeWorkWeights(model, trace);
  auto work = [&](const TraceRequest& r) {
    return r.input_tokens * w.per_input_token + r.output_tokens * w.per_output_token;
  };
  // A sample spread over the whole trace, so the mix matches the trace's.
  std::vector<TraceRequest> sample;
  size_t stride = std::max<size_t>(1, trace.requests.size() / kCalibrationRequests);
  double sample_work = 0;
  for (size_t i = 0; i < trace.requests.size(); i += stride) {
    sample.push_back(trace.requests[i]);
    sample_work += work(trace.requests[i]);
  }
  double mean_work = sample_work / static_cast<double>(sample.size());
  auto meets = [&](double rps) {
    for (size_t i = 0; i < sample.size(); ++i) sample[i].arrival_s = i / rps;
    return SingleReplicaAttainment(model, sample, config.slo) >= config.slo.target_ratio;
  };
  double lo = 0, hi = 1;
  while (meets(hi) && hi < 1e6) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < kBisectionSteps; ++i) {
    double mid = (lo + hi) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  OracleBound bound;
  // The upper end of the bracket: never underestimates capacity (keeps the bound low).
  bound.capacity_rps = hi;
  bound.capacity_work_per_s = hi * mean_work;
  bound.bucket_s = std::max(config.oracle_bucket.count(), 1e-3);
  size_t buckets = static_cast<size_t>(std::ceil(end_s / bound.bucket_s));
  std::vector<double> load(buckets, 0.0);
  for (const auto& r : trace.requests) {
    size_t b = std::min(static_cast<size_t>(r.arrival_s / bound.bucket_s), buckets - 1);
    load[b] += work(r);
  }
  std::vector<double> start_need, lengths;
  for (size_t b = 0; b < buckets; ++b) {
    const double len = std::min(bound.bucket_s, end_s - static_cast<double>(b) * bound.bucket_s);
    start_need.push_back(load[b] / (bound.capacity_work_per_s * len));
    lengths.push_back(len);
  }
  bound.allowed_violations =
      (1 - config.slo.target_ratio) * static_cast<double>(trace.requests.size());
  std::vector<FleetCurve> curves = FleetCurves(config, model, trace, start_need,
                                                     bound.bucket_s, end_s,
                                                     bound.allowed_violations, progress,
                                                     parallel_for);
  double unavoidable = 0;
  for (const FleetCurve& c : curves) unavoidable += c.violations.back();
  bound.best_attainment = 1 - unavoidable / static_cast<double>(trace.requests.size());
  PlanLimits limits;
  limits.min_replicas = config.service.min_replicas;
  limits.max_replicas = config.FleetCeiling();
  limits.initial_replicas = config.service.ReadyAtStart();
  limits.cold_start_s = config.service.cold_start.count();
  CheapestPlan cheapest = SolveCheapestPlan(curves, bound.allowed_violations, limits);
  const double gpus = config.service.gpus_per_replica;
  bound.replicas = std::move(cheapest.replicas);
  bound.serving_gpu_hours = cheapest.serving_replica_seconds * gpus / 3600.0;
  bound.start_gpu_hours = cheapest.start_replica_seconds * gpus / 3600.0;
  bound.gpu_hours = bound.serving_gpu_hours + bound.start_gpu_hours;
  bound.curves = std::move(curves);
  return bound;
}

}  // namespace gpuscale::sim
