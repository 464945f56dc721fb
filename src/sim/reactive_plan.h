// The reactive reference: what an autoscaler that reacts perfectly, but cannot see the
// future, would spend. Between the oracle bound (sim/oracle.h: knows every future request)
// and the static fleet (sim/static_fleet.h: never scales) it answers "how much of my
// policy's gap to the bound is the traffic's unpredictability, and how much is tuning?".
//
// How, from the oracle's fleet curves (violations_b(n) per bucket of the run):
//  1. Each bucket's need: the smallest fleet with violations_b(n) <= (1 - target) x the
//     bucket's requests, i.e. the exact fleet that bucket needed, learned with hindsight.
//  2. The schedule: bucket b runs max(need of buckets b - lag - hold + 1 .. b - lag) + spare
//     replicas, lag = 1 + ceil(cold_start / bucket): a replica serving from the start of b
//     was ordered a cold start earlier, when the last finished bucket was b - lag. The first
//     lag buckets keep the initial replicas.
//  3. Headroom with hindsight: of hold in 1..10 buckets and spare in 0..max_replicas, the
//     cheapest schedule whose violations (summed over the buckets) meet the target;
//     when none does, the one with the best attainment.
// GPU-hours = sum(n_b * len_b) plus the cold starts of the cheapest plan covering it
// (StartReplicaSeconds), times GPUs per replica.
//
// Not a bound: a policy may react within a bucket, forecast, or pick headroom per minute,
// and so beat it; and it is optimistic in knowing each past bucket's exact need and the best
// headroom. A policy near it gains little from better reactions; the rest of its gap to
// the oracle is the foresight no causal policy has. Pure and deterministic.
#pragma once

#include <vector>

#include "sim/oracle.h"

namespace gpuscale::sim {

struct ReactivePlan {
  int lag_buckets = 0;   // each bucket follows the needs of buckets this many before it
  int hold_buckets = 1;  // the largest need over this many buckets
  int spare_replicas = 0;
  double attainment = 0;
  double gpu_hours = 0;
  bool meets_target = false;
  std::vector<int> replicas;  // per bucket
  double bucket_s = 60;       // the oracle's buckets
  // The same schedule with no headroom (hold 1, no spare): each bucket gets its exact need a
  // cold start late. Below the target, reacting alone cannot meet the SLO on this trace: a
  // causal policy needs headroom sized before the load shows (the static fleet has it).
  double no_headroom_attainment = 1;
};

struct ReactiveSetting {
  double target_ratio = 0.99;  // slo.target_ratio
  int lag_buckets = 2;         // 1 + ceil(cold_start / bucket)
  int initial_replicas = 1;    // ready at t = 0
  int max_replicas = 1;
  double cold_start_s = 0;
  double gpus_per_replica = 1;
  double bucket_s = 60;  // the curves' buckets (the last may be shorter), for reporting
};

// The setting for a run of `config` whose oracle used buckets of bucket_s seconds.
ReactiveSetting ReactiveSettingFor(const SimulationConfig& config, double bucket_s);

// Step 1: per bucket, the smallest fleet on its curve meeting target_ratio of the bucket's
// requests; the curve's largest fleet when none does; the curve's smallest for an empty one.
std::vector<int> BucketNeeds(const std::vector<FleetCurve>& curves, double target_ratio);

// Violations of bucket `curve` served by n replicas. Below the curve's first fleet it
// returns that fleet's count (a lower bound: such a fleet misses the run's target anyway,
// FleetCurves stops there); above its last, the last count.
int CurveViolations(const FleetCurve& curve, int n);

// Steps 2-3. Empty curves give an empty plan with attainment 1.
ReactivePlan CheapestReactivePlan(const std::vector<FleetCurve>& curves,
                                  const ReactiveSetting& setting);

}  // namespace gpuscale::sim
