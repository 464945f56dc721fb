// SimReplicaProbe: the LoadProbe of `gpuscale profile --sim`: one simulated replica
// (sim::SimReplica, the continuous-batching replica the simulator and its oracle run) on a
// calibrated ReplicaModel, fed Poisson arrivals of one mix.
//
// A point at rate r: arrivals from loadgen::WorkloadGenerator (Poisson at r, fixed lengths,
// the given seed; the same generator `gpuscale bench --rate` uses, so a simulator profile
// and an endpoint profile offer the same arrival process) over warmup_seconds +
// point_seconds. Every request is served to completion; those arriving in the first
// warmup_seconds are not scored, so the scored ones meet the queues and batches of a replica
// already under that load rather than an idle one. With one seed, the arrivals at rate r are
// those at rate 1 compressed by r, so attainment falls with the rate up to the replica's own
// discreteness, which is what the searches (profile/capacity_search.h) assume.
//
// Deterministic: the same model, SLO, options, mix and rate give the same point.
// Ownership: borrows the model, which must outlive the probe. Not thread-safe.
#pragma once

#include <cstdint>

#include "profile/capacity_search.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"

namespace gpuscale::profile {

struct SimProbeOptions {
  double warmup_seconds = 60;  // simulated seconds of unscored load before each point, >= 0
  double point_seconds = 300;  // simulated seconds whose arrivals are scored, > 0
  uint64_t seed = 1;           // of the arrivals
};

// The most requests one simulated point may hold (rate x (warmup + point)): a search that
// has not saturated the replica by then is fed a model that never saturates.
inline constexpr double kMaxSimulatedRequests = 5e6;

class SimReplicaProbe final : public LoadProbe {
 public:
  SimReplicaProbe(const sim::ReplicaModel& model, const sim::SloSpec& slo,
                  const SimProbeOptions& options);

  // Errors: kInvalidArgument for a rate that is not a positive number, lengths below 1, or
  // more than kMaxSimulatedRequests requests.
  Result<CurvePoint> Measure(const Mix& mix, double rate_rps) override;

 private:
  const sim::ReplicaModel& model_;
  const sim::SloSpec slo_;
  const SimProbeOptions options_;
};

}  // namespace gpuscale::profile
