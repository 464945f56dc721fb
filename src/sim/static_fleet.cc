#include "sim/static_fleet.h"

#include <algorithm>

#include "sim/oracle.h"

namespace gpuscale::sim {

Result<StaticFleet> SmallestStaticFleet(const SimulationConfig& config, const ReplicaModel& model,
                                        const Trace& trace, double end_s,
                                        const StaticFleetProgress& progress) {
  if (trace.requests.empty()) {
    return InvalidArgument("the trace has no requests to size a fleet for", "trace");
  }
  if (!(end_s > 0)) {
    return InvalidArgument("must be > 0 to cost a fleet", "end_s");
  }
  auto attainment = [&](int n) {
    const double a = FleetAttainment(model, trace.requests, n, config.router.kind, config.slo);
    if (progress) progress(n, a);
    return a;
  };
  const int min_n = std::max(config.service.min_replicas, 1);
  const int max_n = std::max(config.FleetCeiling(), min_n);
  // Invariant: fleets below `low` miss the target; `high` meets it (or is max_n, unknown).
  int low = min_n, high = max_n;
  double high_attainment = -1;
  while (low < high) {
    const int mid = low + (high - low) / 2;
    const double a = attainment(mid);
    if (a >= config.slo.target_ratio) {
      high = mid;
      high_attainment = a;
    } else {
      low = mid + 1;
    }
  }
  if (high_attainment < 0) high_attainment = attainment(high);
  StaticFleet fleet;
  fleet.replicas = high;
  fleet.attainment = high_attainment;
  fleet.meets_target = high_attainment >= config.slo.target_ratio;
  fleet.gpu_hours = high * config.service.gpus_per_replica * end_s / 3600.0;
  return fleet;
}

int WarmStartReplicas(const SimulationConfig& config, const ReplicaModel& model,
                      const Trace& trace) {
  Trace head;
  for (const TraceRequest& r : trace.requests) {
    if (r.arrival_s >= kWarmStartSeconds) break;  // sorted by arrival
    head.requests.push_back(r);
  }
  auto fleet = SmallestStaticFleet(config, model, head, kWarmStartSeconds);
  if (!fleet) return config.service.min_replicas;  // empty window: nothing to be warm for
  if (!fleet->meets_target) {
    // Out of reach (prompts no replica serves in time): not the whole cluster, but the
    // smallest fleet within half a point of what the whole cluster attains.
    SimulationConfig reachable = config;
    reachable.slo.target_ratio = std::max(0.0, fleet->attainment - 0.005);
    if (auto near = SmallestStaticFleet(reachable, model, head, kWarmStartSeconds)) fleet = near;
  }
  return std::max(fleet->replicas, config.service.min_replicas);
}

}  // namespace gpuscale::sim
