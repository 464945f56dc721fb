#include "sim/static_fleet.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/oracle.h"

namespace gpuscale::sim {

namespace {

// Replays of n warm replicas over the whole trace, each size once.
class FleetReplays {
 public:
  FleetReplays(const SimulationConfig& config, const ReplicaModel& model, const Trace& trace,
               const StaticFleetProgress& progress)
      : config_(config), model_(model), trace_(trace), progress_(progress) {}

  double Attainment(int n) {
    if (auto it = done_.find(n); it != done_.end()) return it->second;
    const double a = FleetAttainment(model_, trace_.requests, n, config_.router.kind, config_.slo);
    if (progress_) progress_(n, a);
    done_.emplace(n, a);
    return a;
  }
  const std::map<int, double>& Done() const { return done_; }

 private:
  const SimulationConfig& config_;
  const ReplicaModel& model_;
  const Trace& trace_;
  const StaticFleetProgress& progress_;
  std::map<int, double> done_;  // size -> attainment
};

// The smallest n in [low, high] attaining `target`, by bisection (attainment does not fall
// as n grows); `high` when none below it does, whether or not `high` itself does.
int SmallestReaching(FleetReplays& replays, int low, int high, double target) {
  while (low < high) {
    const int mid = low + (high - low) / 2;
    if (replays.Attainment(mid) >= target) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  return high;
}

Status CheckFleetInputs(const Trace& trace, double end_s) {
  if (trace.requests.empty()) {
    return InvalidArgument("the trace has no requests to size a fleet for", "trace");
  }
  if (!(end_s > 0)) return InvalidArgument("must be > 0 to cost a fleet", "end_s");
  return OkStatus();
}

// A fleet's GPU-hours over [0, end_s].
double FleetGpuHours(const SimulationConfig& config, int replicas, double end_s) {
  return replicas * config.service.gpus_per_replica * end_s / 3600.0;
}

StaticFleet Smallest(const SimulationConfig& config, FleetReplays& replays, double end_s) {
  const int min_n = std::max(config.service.min_replicas, 1);
  const int max_n = std::max(config.FleetCeiling(), min_n);
  StaticFleet fleet;
  fleet.replicas = SmallestReaching(replays, min_n, max_n, config.slo.target_ratio);
  fleet.attainment = replays.Attainment(fleet.replicas);
  fleet.meets_target = fleet.attainment >= config.slo.target_ratio;
  fleet.gpu_hours = FleetGpuHours(config, fleet.replicas, end_s);
  return fleet;
}

}  // namespace

Result<StaticFleet> SmallestStaticFleet(const SimulationConfig& config, const ReplicaModel& model,
                                        const Trace& trace, double end_s,
                                        const StaticFleetProgress& progress) {
  GS_RETURN_IF_ERROR(CheckFleetInputs(trace, end_s));
  FleetReplays replays(config, model, trace, progress);
  return Smallest(config, replays, end_s);
}

Result<StaticFrontier> ComputeStaticFrontier(const SimulationConfig& config,
                                             const ReplicaModel& model, const Trace& trace,
                                             double end_s, std::span<const RunCost> runs,
                                             const StaticFleetProgress& progress) {
  GS_RETURN_IF_ERROR(CheckFleetInputs(trace, end_s));
  FleetReplays replays(config, model, trace, progress);
  StaticFrontier frontier;
  frontier.smallest = Smallest(config, replays, end_s);
  const int min_n = std::max(config.service.min_replicas, 1);
  const int max_n = std::max(config.FleetCeiling(), min_n);
  // The step at the target: the size below it, and what one or two more replicas buy.
  for (int n = frontier.smallest.replicas - 1; n <= frontier.smallest.replicas + 2; ++n) {
    if (n >= min_n && n <= max_n) replays.Attainment(n);
  }
  // Per run, the smallest size reaching its attainment among those it could afford; that one
  // beats it unless it ties on both (JudgeAgainstFrontier), and every larger one costs more.
  const double per_replica = FleetGpuHours(config, 1, end_s);
  for (const RunCost& run : runs) {
    const double affordable = std::floor(run.gpu_hours * (1 + kSameCostRelative) / per_replica);
    if (affordable < min_n) continue;
    const int high = static_cast<int>(std::min<double>(affordable, max_n));
    replays.Attainment(SmallestReaching(replays, min_n, high, run.attainment));
  }
  for (const auto& [n, attainment] : replays.Done()) {
    frontier.points.push_back(
        {n, attainment, FleetGpuHours(config, n, end_s), attainment >= config.slo.target_ratio});
  }
  return frontier;
}

FrontierVerdict JudgeAgainstFrontier(const StaticFrontier& frontier, const RunCost& run) {
  FrontierVerdict verdict;
  // Ascending by size, so by cost: the first fleet that beats the run is the cheapest.
  for (const FleetPoint& p : frontier.points) {
    if (p.gpu_hours > run.gpu_hours * (1 + kSameCostRelative)) break;
    const bool cheaper = p.gpu_hours < run.gpu_hours * (1 - kSameCostRelative);
    if (p.attainment >= run.attainment && (cheaper || p.attainment > run.attainment)) {
      verdict.dominated_by = p;
      break;
    }
  }
  const StaticFleet& smallest = frontier.smallest;
  if (smallest.meets_target && smallest.gpu_hours > 0) {
    verdict.cost_vs_static = run.gpu_hours / smallest.gpu_hours;
  }
  return verdict;
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
