// The oracle lower bound on GPU-hours: what a clairvoyant plan needs that knows the future
// load, has every replica ready exactly when needed (cold start paid for free, ahead of
// time), and can hold fractional replicas.
//
// How it is computed:
//  1. Work: each request r costs w_r = in_r * p + out_r * d replica-seconds of a reference
//     engine, with p the per-token prefill time at a full chunk (PrefillSeconds(chunk) /
//     chunk) and d the per-sequence decode-step time at batch 64 and the trace's mean context.
//     Only the ratio p:d matters; it weights the request mix.
//  2. Capacity: the largest work rate c (work-seconds per second) one replica sustains while
//     meeting the SLO for slo.target_ratio of requests, found by bisection on simulations
//     of one replica fed a sample of the trace's own requests at *evenly spaced* arrivals,
//     the smoothest arrival process, so no real arrival process (and no router spreading
//     Poisson arrivals) does better per replica.
//  3. Plan: for each bucket of `oracle_bucket` seconds over [0, end), the replicas needed are
//     max(min_replicas, W_b / (c * len_b)) for the work W_b arriving in the bucket; the bound
//     serving part is the sum of replicas * len_b * gpus_per_replica / 3600.
//  4. Cold starts: a replica becomes ready only after holding its GPUs for cold_start
//     seconds, so the ready count s(t) costs its integral plus cold_start per unit increase.
//     The cheapest plan h_b >= replicas_b (starting from initial_replicas ready at t = 0)
//     is added; per level of the layer-cake an idle gap is bridged (its length) or the
//     replica restarted (cold_start), whichever is cheaper. This stays a lower bound because
//     bucket averages never rise more, in total, than the function they average.
// Any policy meeting the SLO target must have at least that much ready replica-time per
// bucket (fewer replica-seconds cannot process the work at the SLO); fractional replicas,
// free routing and drains only lower the bound further. Assumptions, stated in
// docs/simulation.md: the target is met throughout, not by sacrificing whole load peaks, and
// work is served in the bucket it arrives in (requests last seconds, buckets a minute).
//
// Pure and deterministic. Thread-safety: free function; the model is only read.
#pragma once

#include <vector>

#include "core/result.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace gpuscale::sim {

struct OracleBound {
  double gpu_hours = 0;            // serving_gpu_hours + start_gpu_hours
  double serving_gpu_hours = 0;    // step 3: replicas ready and serving
  double start_gpu_hours = 0;      // step 4: cold starts of the cheapest plan
  double capacity_work_per_s = 0;  // c, in work-seconds per second per replica
  double capacity_rps = 0;         // c expressed in requests/s for the trace's mean request
  double bucket_s = 0;
  std::vector<double> replicas;    // per bucket, fractional
};

// Per-request work weights (step 1); exposed for tests.
struct WorkWeights {
  double per_input_token = 0;
  double per_output_token = 0;
};
WorkWeights ComputeWorkWeights(const ReplicaModel& model, const Trace& trace);

// Attainment of one replica fed `requests` (arrival times as given). Exposed for tests.
double SingleReplicaAttainment(const ReplicaModel& model, const std::vector<TraceRequest>& requests,
                               const SloSpec& slo);

// Step 4: replica-seconds spent in cold starts by the cheapest plan h_b >= need_b (fractional,
// one value per bucket of length len_b), given `initial` replicas ready at t = 0. Every
// replica that becomes ready first holds its GPUs for cold_start_s; a replica idle between two
// needed stretches is either kept (the gap's length) or stopped and started again
// (cold_start_s), whichever is cheaper. Returns only the seconds beyond sum(need_b * len_b).
// REQUIRES: need.size() == len.size(). Exposed for tests.
double StartReplicaSeconds(const std::vector<double>& need, const std::vector<double>& len,
                           double initial, double cold_start_s);

// Errors: kInvalidArgument for an empty trace or end_s <= 0.
Result<OracleBound> ComputeOracleBound(const SimulationConfig& config, const ReplicaModel& model,
                                       const Trace& trace, double end_s);

}  // namespace gpuscale::sim
