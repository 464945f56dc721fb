// The `slo` policy on a mixed fleet (issue 47): replicas count by their capacity in
// reference replicas (ScalingInput::current_capacity / ready_capacity), not one each.
#include <gtest/gtest.h>

#include <string>

#include "scale/metric_names.h"
#include "scale/slo_policy.h"

namespace gpuscale::scale {
namespace {

namespace names = metric_names;

// `replicas` ready replicas holding `capacity` reference replicas in all, serving `rate`
// req/s with `violation` of the requests over the SLO and `waiting` queued on each.
ScalingInput MixedInput(double now, int replicas, double capacity, double rate,
                        double violation = 0, double waiting = 0) {
  ScalingInput in;
  in.now = Seconds{now};
  in.current_replicas = in.ready_replicas = replicas;
  in.current_capacity = in.ready_capacity = capacity;
  MetricValue w, r;
  w.per_replica.assign(replicas, waiting);
  r.per_replica.assign(replicas, 5);
  in.metrics[std::string(names::kWaiting)] = w;
  in.metrics[std::string(names::kRunning)] = r;
  for (auto [name, v] : {std::pair{names::kSuccessRate30s, rate},
                         {names::kSuccessRate2m, rate},
                         {names::kTtftViolationRatio, violation},
                         {names::kTpotViolationRatio, 0.0}}) {
    in.metrics[std::string(name)].service_value = v;
  }
  return in;
}

SloPolicyConfig Config(bool learn) {
  SloPolicyConfig c;
  c.max_replicas = 50;
  c.initial_capacity_rps = 10;  // per reference replica
  c.target_utilization = 1.0;
  c.burst_z = 0;
  c.learn_capacity = learn;
  c.ready_grace = Seconds{0};
  return c;
}

// Ten replicas at half a reference replica each are 5 units: 60 req/s at 10 per unit needs
// 6, a scale-up. Counting replicas read it as 10 held for a need of 6: no growth while the
// fleet was short by a sixth.
TEST(SloPolicyMixedTest, GrowsAFleetWhoseCapacityIsShortWhateverItsCount) {
  SloPolicy policy(Config(false));
  const Decision d = policy.Evaluate(MixedInput(0, 10, 5.0, 60));
  EXPECT_EQ(d.desired_replicas, 6);
  EXPECT_NE(d.reason.find("scale out 5 -> 6"), std::string::npos) << d.reason;
}

// 4 H100s and 3 A100s at 0.41 hold 5.23 units: a need of 5 holds them (the reconciler drains
// nothing that would take them below 5), it does not ask for 7 replicas' worth.
TEST(SloPolicyMixedTest, HoldsAFleetWhoseCapacityMeetsTheNeed) {
  SloPolicy policy(Config(false));
  EXPECT_EQ(policy.Evaluate(MixedInput(0, 7, 5.23, 50)).desired_replicas, 5);
}

// Violations at 77 req/s on 6 H100s and 4 A100s (7.64 units) are a fleet past its capacity
// (10.1 per unit against mu 10), not slower replicas: mu stays. Counting replicas read 7.7
// req/s per replica, inside the band where a violation cuts mu, and cut it to 9 (what made
// the count-based policy buy ever more replicas in a mixed fleet: 2.08x the price).
TEST(SloPolicyMixedTest, LearnsCapacityPerReferenceReplica) {
  SloPolicy policy(Config(true));
  policy.Evaluate(MixedInput(0, 10, 7.64, 77, 0.2, 2));
  EXPECT_DOUBLE_EQ(policy.capacity(), 10.0);
}

// The same violations at 9 req/s per unit (between 60 % of mu and mu) do teach a lower mu.
TEST(SloPolicyMixedTest, CutsCapacityAtALoadPerUnitBelowIt) {
  SloPolicy policy(Config(true));
  policy.Evaluate(MixedInput(0, 10, 7.5, 67.5, 0.2, 2));
  EXPECT_NEAR(policy.capacity(), 9.0, 1e-9);
}

// Without capacities (a single-shape fleet) the counts decide, as before.
TEST(SloPolicyMixedTest, WithoutCapacitiesCountsReplicas) {
  SloPolicy policy(Config(false));
  ScalingInput in = MixedInput(0, 10, 0, 60);
  in.current_capacity.reset();
  in.ready_capacity.reset();
  const Decision d = policy.Evaluate(in);
  // Need 6 against 10 replicas: a scale-in, one replica per tick.
  EXPECT_EQ(d.desired_replicas, 9) << d.reason;
}

}  // namespace
}  // namespace gpuscale::scale
