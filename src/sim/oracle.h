// The oracle lower bound on GPU-hours: what a clairvoyant plan needs that knows every future
// request, starts each replica exactly one cold start before it is needed, and spends the
// SLO's violation budget (1 - target of all requests) wherever it saves the most GPU time.
//
// How it is computed (docs/simulation.md, "The oracle lower bound"):
//  1. Work: each request r costs w_r = in_r * p + out_r * d replica-seconds of a reference
//     engine, with p the per-token prefill time at a full chunk and d the per-sequence
//     decode-step time at batch 64 and the trace's mean context (only the ratio matters).
//  2. Capacity: the largest work rate c one replica sustains with slo.target_ratio of
//     requests meeting the SLO, by bisection on simulations of one replica fed a sample of
//     the trace's own requests at evenly spaced arrivals. Printed as the per-replica figure
//     a policy can start from, and the first fleet size tried in step 3.
//  3. Fleet curves: for each bucket of `oracle_bucket` seconds, the bucket's own requests
//     (at their real arrival times, after 30 s of the preceding requests as warm-up) are
//     replayed on n warm replicas behind the configured router, for every n from where
//     the violations exceed the budget up to the first n without violations (or
//     max_replicas): violations_b(n).
//  4. Plan: fleet sizes h_b per bucket minimizing serving time plus cold starts,
//     sum(h_b * len_b) + cold_start x (total rise of h, from initial_replicas ready at
//     t = 0), subject to sum_b violations_b(h_b) <= budget. A replica serves only after
//     holding its GPUs for cold_start seconds, so each unit of rise costs one cold start; a
//     replica idle between two needed stretches is kept (h stays up) or restarted,
//     whichever is cheaper. Fractional (each bucket may mix two sizes: the linear program
//     over the curves' lower convex hulls), which is never above the best integer plan;
//     solved exactly through its Lagrangian dual (SolveCheapestPlan).
//     GPU-hours = its cost x GPUs per replica / 3600.
// Relaxations, each of which only lowers the bound: fractional fleets, free drains, each
// bucket's requests served by its own fleet however long they run past its end, the router
// and the replica model as configured. What it assumes: the policy is judged on the
// configured router; a bucket's fleet size is what matters (a policy acts every control
// interval; the bucket is a minute by default, so a policy that resizes within a minute
// could, in principle, beat it there); and fewer replicas never leave fewer violations (a
// fleet below a bucket's curve is ruled out, or misses every request where the curve's
// smallest fleet already does).
//
// Pure and deterministic: the buckets of step 3 run on several threads, each alone.
#pragma once

#include <functional>
#include <vector>

#include "core/result.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace gpuscale::sim {

// Step 3: violations_b(n) for n in [n_low, n_low + violations.size()).
struct FleetCurve {
  int n_low = 0;
  std::vector<int> violations;
  int scored = 0;   // requests arriving in the bucket
  double len = 0;   // seconds
};

struct OracleBound {
  double gpu_hours = 0;            // serving_gpu_hours + start_gpu_hours
  double serving_gpu_hours = 0;    // step 4: replicas ready (serving, or kept idle for later)
  double start_gpu_hours = 0;      // step 4: cold starts
  double capacity_work_per_s = 0;  // c, in work-seconds per second per replica
  double capacity_rps = 0;         // c expressed in requests/s for the trace's mean request
  double bucket_s = 0;
  double allowed_violations = 0;   // (1 - slo.target_ratio) x requests
  // The best attainment any plan within max_replicas reaches; below slo.target_ratio the
  // target is out of reach and the plan is the one with the fewest violations.
  double best_attainment = 1;
  std::vector<double> replicas;    // step 4's plan, ready replicas per bucket, fractional
  std::vector<FleetCurve> curves;  // step 3, per bucket (sim/reactive_plan.h reads them)
};

// Per-request work weights (step 1); exposed for tests.
struct WorkWeights {
  double per_input_token = 0;
  double per_output_token = 0;
};
WorkWeights ComputeWorkWeights(const ReplicaModel& model, const Trace& trace);

// Share of `requests` meeting the SLO when `replicas` warm replicas behind `router` serve them
// all (sorted by arrival): 1 - FleetViolations / requests; 0 for no requests. The static
// fleet's sizing (sim/static_fleet.h) and the capacity bisection below use it.
double FleetAttainment(const ReplicaModel& model, const std::vector<TraceRequest>& requests,
                       int replicas, route::PickerKind router, const SloSpec& slo);

// Attainment of one replica fed `requests` (arrival times as given). Exposed for tests.
double SingleReplicaAttainment(const ReplicaModel& model, const std::vector<TraceRequest>& requests,
                               const SloSpec& slo);

// Replica-seconds spent in cold starts by the cheapest plan h_b >= need_b (fractional,
// one value per bucket of length len_b), given `initial` replicas ready at t = 0. Every
// replica that becomes ready first holds its GPUs for cold_start_s; a replica idle between two
// needed stretches is either kept (the gap's length) or stopped and started again
// (cold_start_s), whichever is cheaper. Returns only the seconds beyond sum(need_b * len_b).
// REQUIRES: need.size() == len.size(). Exposed for tests.
double StartReplicaSeconds(const std::vector<double>& need, const std::vector<double>& len,
                           double initial, double cold_start_s);

// SLO violations among requests[first_scored..] when `replicas` warm replicas behind
// `router` serve all of `requests` (sorted by arrival). Exposed for tests.
int FleetViolations(const ReplicaModel& model, const std::vector<TraceRequest>& requests,
                    size_t first_scored, int replicas, route::PickerKind router,
                    const SloSpec& slo);

// Called with the share of buckets replayed (0..1], about every 10 %; from the threads
// OracleParallelFor runs the buckets on, so possibly from two at once.
using OracleProgress = std::function<void(double share)>;

// Runs body(0) .. body(n - 1) and returns when all are done; body is safe to run at once for
// distinct indexes. Buckets are independent and replaying them is most of the oracle's time,
// so the caller picks the threads (the CLI: one per core); the core starts none itself.
// Empty: one after the other. Results do not depend on it.
using OracleParallelFor =
    std::function<void(size_t n, const std::function<void(size_t)>& body)>;

// Step 3 for every bucket of `bucket_s` over [0, end_s), starting at ceil(start_need[b]).
std::vector<FleetCurve> FleetCurves(const SimulationConfig& config, const ReplicaModel& model,
                                    const Trace& trace, const std::vector<double>& start_need,
                                    double bucket_s, double end_s, double allowed_violations,
                                    const OracleProgress& progress = {},
                                    const OracleParallelFor& parallel_for = {});

// Step 4: the cheapest plan, serving time and cold starts together, within the budget.
struct PlanLimits {
  int min_replicas = 1;
  int max_replicas = 1;
  int initial_replicas = 1;  // ready at t = 0
  double cold_start_s = 0;
};
struct CheapestPlan {
  std::vector<double> replicas;  // held per bucket: a mix of two integer plans
  double serving_replica_seconds = 0;  // sum(replicas_b * len_b)
  double start_replica_seconds = 0;    // the bound's remainder: cold starts
  double violations = 0;               // on the curves' lower convex hulls
};
// Minimizes sum(h_b * len_b) + cold_start_s x (total rise of h, from initial_replicas) over
// fractional fleets h_b in [min, max] subject to sum V_b(h_b) <= allowed_violations, V_b the
// lower convex hull of curve b (below a curve's first fleet: infeasible, or all requests
// missed when that fleet already misses them all). When no plan fits, the budget becomes the
// fewest violations any plan leaves. Exact (Lagrangian dual of the linear program,
// sim/oracle_plan.cc); serving + start replica-seconds is never above the optimum.
CheapestPlan SolveCheapestPlan(const std::vector<FleetCurve>& curves, double allowed_violations,
                              const PlanLimits& limits);

// Errors: kInvalidArgument for an empty trace or end_s <= 0.
Result<OracleBound> ComputeOracleBound(const SimulationConfig& config, const ReplicaModel& model,
                                       const Trace& trace, double end_s,
                                       const OracleProgress& progress = {},
                                       const OracleParallelFor& parallel_for = {});

}  // namespace gpuscale::sim
