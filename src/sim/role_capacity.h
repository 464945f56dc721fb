// What one prefill-only or decode-only replica sustains, from the calibrated replica model
// (sim/replica_model.h): the profile the `disagg` policy sizes its pools from in the
// simulator, computed from the model alone (no trace), as a load test would give it.
//
//  - prefill, per prompt length P: the prompt tokens/s one replica sustains with
//    slo.target_ratio of its requests within the TTFT target (queue + prefill), found by
//    bisection on simulations of one replica fed Poisson arrivals of prompts of P (a load
//    test, as `gpuscale profile` does for aggregated replicas), below the saturation
//    throughput of full chunks;
//  - decode, per mix (P, O): generated tokens/s of the largest batch B (<= max_batch_size)
//    whose KV (B x (P + O)) fits and whose decode step at the mean context (P + O/2 per
//    sequence) stays within the TPOT target: B / step seconds.
// Pure; thread-safe (reads the model only).
#pragma once

#include <vector>

#include "scale/slo_policy.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"

namespace gpuscale::sim {

// One point per prompt length of a fixed grid (128 to 32k tokens), output_tokens = 1; a
// prompt the replica cannot prefill within the TTFT target even alone gets the saturation
// throughput (no load meets the target there; the pool is then sized on throughput).
// Deterministic (fixed seed).
std::vector<scale::MixCapacity> PrefillCapacities(const ReplicaModel& model, const SloSpec& slo);
// One point per (prompt, output) of a fixed grid. REQUIRES: tpot_seconds > 0.
std::vector<scale::MixCapacity> DecodeCapacities(const ReplicaModel& model, double tpot_seconds);

}  // namespace gpuscale::sim
