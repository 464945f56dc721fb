// The cheapest static mix (issue 47): for a service that lists variants, the cheapest
// constant fleet of warm replicas of one or two on-demand variants that meets the SLO target
// on a trace, beside each variant's smallest fleet alone. It is the static frontier's answer
// to "would a mix pay?" with hindsight: a clairvoyant mix, chosen knowing the whole trace,
// that an autoscaled mixed fleet has to be compared with. Spot variants are left out (a static
// fleet has no preemptions to price in).
//
// Where a mix can pay: not from price per capacity alone when the types cost within a few
// percent per capacity (a fleet of the cheaper one is then as cheap), but from whole replicas:
// a need of 2.2 fast replicas buys 3 of them, or 2 and one slower one for less.
//
// Pure and deterministic; the replays run one after another on the calling thread.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/result.h"
#include "sim/sim_orchestrator.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace gpuscale::sim {

// One replica of a mixed fleet: its model (borrowed) and its relative capacity, the weight
// least-outstanding routing divides by (route::RouterLoad).
struct MixedReplica {
  const ReplicaModel* model = nullptr;
  double capacity = 1;
  int64_t max_prompt_tokens = 0;  // route::Candidate's; 0: any
};

// Serves `requests` (sorted by arrival) on these warm replicas behind the engine's
// route::Picker of kind `router` and returns their records with the times filled in. The
// static fleet's and the oracle's replays (FleetViolations) run on it. REQUIRES: fleet not
// empty.
std::vector<RequestRecord> ReplayOnFleet(const std::vector<MixedReplica>& fleet,
                                         const std::vector<TraceRequest>& requests,
                                         route::PickerKind router);

// Share of `requests` (sorted by arrival) meeting the SLO when these warm replicas serve all
// of them behind the engine's route::Picker of kind `router` (capacity weights, long prompts
// to the replicas that take them; no prefix cache, no slow start: the replicas are warm): as
// FleetAttainment (sim/oracle.h) for one shape, which it equals with every capacity 1.
// 0 for no requests. REQUIRES: fleet not empty.
double MixedFleetAttainment(const std::vector<MixedReplica>& fleet,
                            const std::vector<TraceRequest>& requests, route::PickerKind router,
                            const SloSpec& slo);

// Replicas per offer (the offers' order), their price and whether the predicate held.
struct MixChoice {
  std::vector<int> replicas;
  double price = 0;
};

// The cheapest counts, at most two offers non-zero, with `meets(counts)` true, where
// counts[i] <= max_replicas[i] and the sum <= max_total. REQUIRES: meets is monotone (one
// more replica of any offer never turns it false), prices > 0. nullopt: nothing within the
// limits meets it. Deterministic: among equal prices, the first found (single offers first,
// in order; then pairs). Each offer alone is bisected; for a pair, every count of the first
// below its own smallest fleet is tried with the smallest count of the second that meets,
// bisected within what would still be cheaper than the best so far.
std::optional<MixChoice> CheapestMix(const std::vector<double>& prices,
                                     const std::vector<int>& max_replicas, int max_total,
                                     const std::function<bool(const std::vector<int>&)>& meets);

struct StaticMixPoint {
  std::string name;           // e.g. "h100 x2 + a100 x1"
  std::vector<int> replicas;  // per variant, in the service's order (spot ones 0)
  double attainment = 0;
  double cost = 0;  // price x end_s, in the variants' currency
  double gpu_hours = 0;
};

struct StaticMix {
  // Per on-demand variant, its smallest fleet alone meeting the target (nullopt: none does).
  std::vector<std::optional<StaticMixPoint>> single;
  std::optional<StaticMixPoint> cheapest;  // over singles and pairs; nullopt: none meets
  int replays = 0;
};

// Errors: kInvalidArgument for an empty trace, end_s <= 0 or no on-demand variant.
Result<StaticMix> CheapestStaticMix(const SimulationConfig& config,
                                    const std::vector<VariantRuntime>& variants, const Trace& trace,
                                    double end_s);

}  // namespace gpuscale::sim
