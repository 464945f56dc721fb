// The static-fleet reference: the smallest constant number of warm replicas that meets the
// SLO target on a trace, and what it costs. It answers "how many GPUs if I do not
// autoscale?" and is the yardstick an autoscaler must beat to be worth running: the
// oracle bound (sim/oracle.h) is what no policy can go below, the static fleet is what
// doing nothing costs.
//
// How: every request of the trace (as transformed: rate scale, time compression) is
// replayed on n replicas that are warm from t = 0 and never change, behind the configured
// router and replica model (the oracle's fleet replay over the whole trace,
// FleetAttainment); attainment = requests meeting the SLO / requests. Attainment does not fall as n
// grows (pinned by the oracle's tests), so n is found by bisection over
// [max(min_replicas, 1), FleetCeiling()]: about log2(max_replicas) replays. GPU-hours =
// n x gpus_per_replica x end_s / 3600, end_s being the policy run's duration so that the
// figures compare.
//
// The frontier (ComputeStaticFrontier): the static fleets of the sizes that decide how a run
// compares with not autoscaling at all, each replayed once, and for each run the verdict
// against them (JudgeAgainstFrontier): the cheapest static fleet that beats it, if any, and
// its GPU-hours over the smallest fleet meeting the target.
//
// Pure and deterministic; the replays run one after another on the calling thread.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/result.h"
#include "sim/replica_model.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace gpuscale::sim {

struct StaticFleet {
  // The smallest fleet meeting slo.target_ratio; FleetCeiling() when none within it does.
  int replicas = 0;
  double attainment = 0;  // of that fleet
  double gpu_hours = 0;
  bool meets_target = false;
};

// Called after each replay with the fleet size tried and its attainment.
using StaticFleetProgress = std::function<void(int replicas, double attainment)>;

// Errors: kInvalidArgument for an empty trace or end_s <= 0.
Result<StaticFleet> SmallestStaticFleet(const SimulationConfig& config, const ReplicaModel& model,
                                        const Trace& trace, double end_s,
                                        const StaticFleetProgress& progress = {});

// One point of the static frontier: `replicas` warm replicas from t = 0 to end_s.
struct FleetPoint {
  int replicas = 0;
  double attainment = 0;
  double gpu_hours = 0;  // replicas x gpus_per_replica x end_s / 3600
  bool meets_target = false;
};

// What a run attained and cost, to be judged against the frontier.
struct RunCost {
  double attainment = 0;
  double gpu_hours = 0;
};

// The static fleets replayed on a trace, ascending by size, each size once.
struct StaticFrontier {
  std::vector<FleetPoint> points;
  // The smallest fleet meeting the target, as SmallestStaticFleet gives it (the ceiling with
  // meets_target false when none does).
  StaticFleet smallest;
};

// The sizes replayed, between max(min_replicas, 1) and FleetCeiling() (the static fleet's
// range): those the bisection for the smallest fleet meeting the target visits, that fleet's
// neighbours (one fewer, one and two more), and for each of `runs` those a bisection for the
// smallest size reaching the run's attainment visits, among the sizes whose GPU-hours are
// within the run's. As attainment does not fall as the fleet grows, that size is the cheapest
// that can beat the run and every larger one costs more, so no verdict depends on a size
// left out. Each size is replayed once, whichever questions share it: a --compare passes
// every run and sizes the frontier once for all of them. Errors: as SmallestStaticFleet.
Result<StaticFrontier> ComputeStaticFrontier(const SimulationConfig& config,
                                             const ReplicaModel& model, const Trace& trace,
                                             double end_s, std::span<const RunCost> runs,
                                             const StaticFleetProgress& progress = {});

// A run against the frontier.
struct FrontierVerdict {
  // The cheapest static fleet that beats the run: GPU-hours <= the run's and attainment >=
  // the run's, at least one of them strictly (GPU-hours within kSameCostRelative of each
  // other count as equal). nullopt: none on the frontier does.
  std::optional<FleetPoint> dominated_by;
  // The run's GPU-hours over those of the smallest static fleet meeting the target; nullopt
  // where no fleet within the ceiling meets it (or it costs nothing).
  std::optional<double> cost_vs_static;
};
inline constexpr double kSameCostRelative = 1e-9;
FrontierVerdict JudgeAgainstFrontier(const StaticFrontier& frontier, const RunCost& run);

// `service.initial_replicas: auto`: the smallest static fleet meeting the SLO target on the
// trace's first kWarmStartSeconds (at least min_replicas, at most FleetCeiling()). A
// simulated service starts in the middle of its traffic, warm for it, as a service that has
// been scaled on the same load before the trace began would be; sizing that start from the
// trace itself is a property of the scenario, the same for every policy and reference, not
// something a policy learns from hindsight. An empty window gives min_replicas; where no
// fleet meets the target, the smallest within half a point of the fleet ceiling's attainment.
inline constexpr double kWarmStartSeconds = 300;
int WarmStartReplicas(const SimulationConfig& config, const ReplicaModel& model,
                      const Trace& trace);

}  // namespace gpuscale::sim
