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
//     is the sum of replicas * len_b * gpus_per_replica / 3600.
// Any policy meeting the SLO target must hold at least that much replica-time per bucket
// (fewer replica-seconds cannot process the work at the SLO), ignoring cold starts and
// integer replicas only lowers the bound further. Assumptions, stated in
// docs/simulation.md: the target is met throughout, not by sacrificing whole load peaks.
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
  double gpu_hours = 0;
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

// Errors: kInvalidArgument for an empty trace or end_s <= 0.
Result<OracleBound> ComputeOracleBound(const SimulationConfig& config, const ReplicaModel& model,
                                       const Trace& trace, double end_s);

}  // namespace gpuscale::sim
