#include "scale/slo_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "scale/metric_names.h"

namespace gpuscale::scale {
namespace {

namespace names = metric_names;

struct Load {
  double rate = 0;       // completions/s (and arrivals, in steady state)
  double waiting = 0;    // per replica
  double running = 5;    // per replica
  double violation = 0;  // TTFT/TPOT violation ratio
};

ScalingInput SloInput(double now, int replicas, const Load& load, int ready = -1) {
  ScalingInput in;
  in.now = Seconds{now};
  in.current_replicas = replicas;
  in.ready_replicas = ready < 0 ? replicas : ready;
  MetricValue waiting, running;
  waiting.per_replica.assign(in.ready_replicas, load.waiting);
  running.per_replica.assign(in.ready_replicas, load.running);
  in.metrics[std::string(names::kWaiting)] = waiting;
  in.metrics[std::string(names::kRunning)] = running;
  auto service = [&](std::string_view name, double v) {
    MetricValue m;
    m.service_value = v;
    in.metrics[std::string(name)] = m;
  };
  service(names::kSuccessRate30s, load.rate);
  service(names::kSuccessRate2m, load.rate);
  service(names::kTtftViolationRatio, load.violation);
  service(names::kTpotViolationRatio, 0);
  return in;
}

// `in` with the service's 30 s token rates (token mode's inputs).
ScalingInput WithTokens(ScalingInput in, double prompt_tps, double generated_tps) {
  in.metrics[std::string(names::kPromptTokensRate30s)].service_value = prompt_tps;
  in.metrics[std::string(names::kGenerationTokensRate30s)].service_value = generated_tps;
  return in;
}

SloPolicyConfig Config() {
  SloPolicyConfig c;
  c.min_replicas = 1;
  c.max_replicas = 50;
  c.initial_capacity_rps = 10;
  c.target_utilization = 1.0;
  c.burst_z = 0;
  c.learn_capacity = false;
  return c;
}

TEST(SloPolicyTest, ProvisionsForArrivalRateOverCapacity) {
  SloPolicy policy(Config());
  // 95 req/s at 10 req/s per replica -> 10 replicas.
  EXPECT_EQ(policy.Evaluate(SloInput(0, 4, {95})).desired_replicas, 10);
}

// Each violation ratio is shown as read: an absent one is "n/a", never a 0 (the max of the
// present ones is what the policy reacts to).
TEST(SloPolicyTest, ReasonShowsEachViolationRatioAndAnAbsentOneAsNotAvailable) {
  struct Case {
    std::optional<double> ttft, tpot;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {0.01, 0.25, "violations TTFT 0.01, TPOT 0.25"},
      {0.01, std::nullopt, "violations TTFT 0.01, TPOT n/a"},
      {std::nullopt, 0.25, "violations TTFT n/a, TPOT 0.25"},
      {std::nullopt, std::nullopt, "violations TTFT n/a, TPOT n/a"},
  };
  for (const Case& c : cases) {
    SloPolicy policy(Config());
    ScalingInput in = SloInput(0, 4, {40});
    in.metrics.erase(std::string(names::kTtftViolationRatio));
    in.metrics.erase(std::string(names::kTpotViolationRatio));
    if (c.ttft) in.metrics[std::string(names::kTtftViolationRatio)].service_value = *c.ttft;
    if (c.tpot) in.metrics[std::string(names::kTpotViolationRatio)].service_value = *c.tpot;
    const Decision d = policy.Evaluate(in);
    EXPECT_NE(d.reason.find(c.expected), std::string::npos) << c.expected << "\n" << d.reason;
  }
}

TEST(SloPolicyTest, HoldsWithoutDataAndOnMetricErrors) {
  SloPolicy policy(Config());
  ScalingInput empty;
  empty.current_replicas = 3;
  EXPECT_EQ(policy.Evaluate(empty).desired_replicas, 3);
  auto failed = SloInput(15, 3, {1});
  failed.metrics_error = true;
  auto d = policy.Evaluate(failed);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_NE(d.reason.find("metrics unavailable"), std::string::npos) << d.reason;
}

TEST(SloPolicyTest, CountsQueueGrowthAsArrivals) {
  SloPolicy policy(Config());
  policy.Evaluate(SloInput(0, 5, {50, 0, 5}));
  // In-system grows by 5 replicas * 10 = 50 requests in 10 s: arrivals 50 + 5 = 55, a rise of
  // 5 over the 2-minute rate (x 75 / 45 s: 8.3), plus the backlog 50 / 30 s: 65.
  auto d = policy.Evaluate(SloInput(10, 5, {50, 10, 5}));
  EXPECT_EQ(d.desired_replicas, 7) << d.reason;
}

// Arrivals over the completion rate's 30 s window are its completions plus the system's growth
// over that same window. A queue that rose and then held still adds nothing once the rise has
// left the window; a growth smoothed tick to tick still counted it (here 5/s at the last tick:
// arrivals read 55 for 50, and the trend term bought on top of that).
TEST(SloPolicyTest, QueueGrowthIsMeasuredOverTheCompletionWindow) {
  SloPolicy policy(Config());
  policy.Evaluate(SloInput(0, 5, {50, 0, 5}));
  policy.Evaluate(SloInput(15, 5, {50, 120, 5}));  // 600 more in the system
  policy.Evaluate(SloInput(30, 5, {50, 120, 5}));
  auto d = policy.Evaluate(SloInput(45, 5, {50, 120, 5}));
  // 50 arrive, no trend; the backlog 600 / 30 s: 70.
  EXPECT_EQ(d.desired_replicas, 7) << d.reason;
  EXPECT_NE(d.reason.find("(now 50)"), std::string::npos) << d.reason;
}

TEST(SloPolicyTest, ExtrapolatesRisingTrendOverHorizon) {
  auto c = Config();
  c.forecast_horizon = Seconds{90};
  SloPolicy policy(c);
  auto in = SloInput(0, 5, {50});
  in.metrics[std::string(names::kSuccessRate2m)].service_value = 41;  // rising 9 req/s per 45 s
  // 50 + 0.2 * 90 = 68 -> 7 replicas.
  EXPECT_EQ(policy.Evaluate(in).desired_replicas, 7);
}

TEST(SloPolicyTest, ScalesDownOnlyAfterDelayAndByOneStep) {
  auto c = Config();
  c.scale_down_delay = Seconds{60};
  SloPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(SloInput(0, 10, {100})).desired_replicas, 10);
  EXPECT_EQ(policy.Evaluate(SloInput(15, 10, {30})).desired_replicas, 10);  // within the delay
  EXPECT_EQ(policy.Evaluate(SloInput(45, 10, {30})).desired_replicas, 10);
  EXPECT_EQ(policy.Evaluate(SloInput(75, 10, {30})).desired_replicas, 9);  // one step
  EXPECT_EQ(policy.Evaluate(SloInput(90, 9, {30})).desired_replicas, 8);
}

TEST(SloPolicyTest, NeverScalesInWhileRequestsQueue) {
  auto c = Config();
  c.scale_down_delay = Seconds{0};
  SloPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(SloInput(0, 10, {100})).desired_replicas, 10);
  // 30 req/s needs 3 replicas, but 5 requests wait on every replica: the fleet is short now.
  auto held = policy.Evaluate(SloInput(15, 10, {30, 5, 5}));
  EXPECT_EQ(held.desired_replicas, 10);
  EXPECT_NE(held.reason.find("50 requests wait in a queue"), std::string::npos) << held.reason;
  // A stray waiting request per replica is a batch filling up, not a queue.
  EXPECT_EQ(policy.Evaluate(SloInput(30, 10, {30, 1, 5})).desired_replicas, 9);
}

// 100 req/s with a one-minute burst to 250 every 10 minutes from t = 600, ticks of 15 s (fed
// with no requests in the system, so that fleet changes show no growth of it).
double PeriodicLoad(double t) {
  return t >= 600 && std::fmod(t - 600, 600) < 60 ? 250 : 100;
}

TEST(SloPolicyTest, IsReadyAheadOfABurstThatRecursOnAPeriod) {
  auto c = Config();
  c.scale_down_delay = Seconds{0};
  c.max_scale_down_step = 100;
  c.burst_lead = Seconds{90};
  SloPolicy policy(c);
  int replicas = 10;
  for (double t = 0; t < 2100; t += 15) {
    replicas = policy.Evaluate(SloInput(t, replicas, {PeriodicLoad(t), 0, 0})).desired_replicas;
  }
  EXPECT_EQ(replicas, 10);  // between bursts: the level's need
  for (double t = 2100; t < 2325; t += 15) {
    replicas = policy.Evaluate(SloInput(t, replicas, {PeriodicLoad(t), 0, 0})).desired_replicas;
  }
  // 75 s before the fourth burst (t = 2400): ready for it, at 100 req/s.
  auto d = policy.Evaluate(SloInput(2325, replicas, {PeriodicLoad(2325), 0, 0}));
  EXPECT_GE(d.desired_replicas, 25) << d.reason;
  EXPECT_NE(d.reason.find("a burst every 600 s"), std::string::npos) << d.reason;

  // After that burst, between it and the next, the burst's fleet goes at once: neither the
  // scale-down delay nor the one-replica step holds it.
  c.scale_down_delay = Seconds{300};
  c.max_scale_down_step = 1;
  SloPolicy held(c);
  replicas = 10;
  for (double t = 0; t < 2595; t += 15) {
    replicas = held.Evaluate(SloInput(t, replicas, {PeriodicLoad(t), 0, 0})).desired_replicas;
  }
  EXPECT_EQ(replicas, 10);

  c.scale_down_delay = Seconds{0};
  c.max_scale_down_step = 100;
  c.recurring_bursts = false;  // the forecast alone: nothing until the burst shows
  SloPolicy plain(c);
  replicas = 10;
  for (double t = 0; t <= 2325; t += 15) {
    replicas = plain.Evaluate(SloInput(t, replicas, {PeriodicLoad(t), 0, 0})).desired_replicas;
  }
  EXPECT_EQ(replicas, 10);
}

// While replicas ordered for a queue are starting, the queue grows because they are not
// ready, not because more are needed: it keeps what was ordered and buys no more (issue 43:
// a burst that 8 replicas absorb sent the fleet from 4 to 23, a cold start's queue bought
// again each tick). The rates still buy more when the load itself is higher.
TEST(SloPolicyTest, AQueueDuringAColdStartBuysNoMoreThanWasOrdered) {
  SloPolicy policy(Config());
  // 3 ready, 6 ordered; 40 req/s arrive (4 replicas' worth) and 600 wait: drained over 30 s
  // they would ask for 6 replicas more.
  auto d = policy.Evaluate(SloInput(0, 6, {40, 200, 5, 0}, 3));
  EXPECT_EQ(d.desired_replicas, 6) << d.reason;
  // The load itself outgrows the order: 70 req/s needs 7 whatever the queue.
  SloPolicy busier(Config());
  EXPECT_EQ(busier.Evaluate(SloInput(0, 6, {70, 200, 5, 0}, 3)).desired_replicas, 7);
  // Once the fleet is ready, a queue still buys its drain: 40 + 1800 / 30 = 100 req/s.
  SloPolicy ready(Config());
  EXPECT_EQ(ready.Evaluate(SloInput(0, 6, {40, 300, 5, 0})).desired_replicas, 10);
}

// A replica's queue is served by that replica alone (new arrivals go to the least loaded), so
// a queue piled on two replicas during a step asks for at most two replicas' capacity, and
// does not hold the rest of the fleet: 10 ready at 50 req/s (mu 10), 600 waiting on each of
// two. Summed whole (1,200 / 30 s = 40 req/s) the queue asked for 9 and held all 10.
TEST(SloPolicyTest, AQueuePiledOnAFewReplicasAsksForAtMostOneReplicaEach) {
  auto pinned = [](double now) {
    ScalingInput in = SloInput(now, 10, {50, 0, 5});
    auto& waiting = in.metrics[std::string(names::kWaiting)].per_replica;
    waiting[0] = waiting[1] = 600;
    return in;
  };
  SloPolicy policy(Config());
  Decision d = policy.Evaluate(pinned(0));
  // 50 + min(600 / 30, 10) x 2 = 70: need 7, down one step.
  EXPECT_EQ(d.desired_replicas, 9) << d.reason;
  EXPECT_EQ(d.reason.find("wait in a queue"), std::string::npos) << d.reason;
  // The same 1,200 spread over every replica is a fleet short now: hold.
  SloPolicy spread(Config());
  d = spread.Evaluate(SloInput(0, 10, {50, 120, 5}));
  EXPECT_EQ(d.desired_replicas, 10) << d.reason;
  EXPECT_NE(d.reason.find("wait in a queue"), std::string::npos) << d.reason;
}

TEST(SloPolicyTest, ViolationWithQueueAddsAReplica) {
  SloPolicy policy(Config());
  // Load says 3 replicas, but the SLO is violated and requests queue.
  EXPECT_EQ(policy.Evaluate(SloInput(0, 3, {25, 2, 5, 0.2})).desired_replicas, 4);
}

// Violations right after the fleet grew are the old fleet's (the one-minute window lags) or
// the new replica's first flood: for ready_grace they neither add a replica nor cut mu.
TEST(SloPolicyTest, ViolationsRightAfterAReplicaTurnsReadyAreNotOverload) {
  auto c = Config();
  c.learn_capacity = true;
  c.ready_grace = Seconds{60};
  SloPolicy policy(c);
  policy.Evaluate(SloInput(0, 4, {24}, 3));  // 3 ready at 8 req/s each, one starting
  // t = 15: the fourth is ready; the minute's window still shows the misses of before.
  EXPECT_EQ(policy.Evaluate(SloInput(15, 4, {32, 2, 5, 0.2})).desired_replicas, 4);
  EXPECT_NEAR(policy.capacity(), 10.0, 1e-9);
  {
    auto d = policy.Evaluate(SloInput(60, 4, {32, 2, 5, 0.2}));
    EXPECT_EQ(d.desired_replicas, 4) << d.reason;
  }
  // 60 s after the rise the fleet is judged again: +1, and mu cut by 10 %.
  EXPECT_EQ(policy.Evaluate(SloInput(75, 4, {32, 2, 5, 0.2})).desired_replicas, 5);
  EXPECT_NEAR(policy.capacity(), 9.0, 1e-9);
  // Without the grace the first violating tick already reacts.
  c.ready_grace = Seconds{0};
  SloPolicy eager(c);
  eager.Evaluate(SloInput(0, 4, {24}, 3));
  EXPECT_EQ(eager.Evaluate(SloInput(15, 4, {32, 2, 5, 0.2})).desired_replicas, 5);
  EXPECT_NEAR(eager.capacity(), 9.0, 1e-9);
}

TEST(SloPolicyTest, ProbesTheCapacityUpAtTheLoadItPlansReplicasFor) {
  auto c = Config();
  c.learn_capacity = true;
  c.target_utilization = 0.85;
  SloPolicy policy(c);
  // 10 replicas at 8.5 req/s each: the planned 85 % of mu = 10, the SLO holding.
  for (double t = 0; t < 150; t += 15) policy.Evaluate(SloInput(t, 10, {85}));
  EXPECT_GT(policy.capacity(), 10.0);
  // At half the planned load a clean minute says nothing: no probing.
  SloPolicy light(c);
  for (double t = 0; t < 150; t += 15) light.Evaluate(SloInput(t, 10, {42}));
  EXPECT_DOUBLE_EQ(light.capacity(), 10.0);
}

TEST(SloPolicyTest, LearnsLowerCapacityFromViolationsAtLoad) {
  auto c = Config();
  c.learn_capacity = true;
  SloPolicy policy(c);
  policy.Evaluate(SloInput(0, 4, {36, 0, 5, 0.2}));  // 9 req/s per replica violates
  EXPECT_NEAR(policy.capacity(), 9.0, 1e-9);
  policy.Evaluate(SloInput(15, 4, {36, 0, 5, 0.2}));  // inside the cut cooldown: no second cut
  EXPECT_NEAR(policy.capacity(), 9.0, 1e-9);
}

// With min_capacity_ratio 1 the initial figure is a floor: cuts stop there, learning above it
// is still cut back.
TEST(SloPolicyTest, CutsNeverGoBelowTheCapacityFloor) {
  auto c = Config();
  c.learn_capacity = true;
  c.min_capacity_ratio = 1;
  SloPolicy policy(c);
  policy.Evaluate(SloInput(0, 4, {48}));  // 12 req/s per replica held the SLO
  EXPECT_NEAR(policy.capacity(), 12.0, 1e-9);
  policy.Evaluate(SloInput(15, 4, {44, 0, 5, 0.2}));  // 11 req/s per replica violates
  EXPECT_NEAR(policy.capacity(), 10.8, 1e-9);
  policy.Evaluate(SloInput(150, 4, {40, 0, 5, 0.2}));  // past the cooldown: 10.8 -> the floor
  EXPECT_NEAR(policy.capacity(), 10.0, 1e-9);
  policy.Evaluate(SloInput(300, 4, {40, 0, 5, 0.2}));
  EXPECT_NEAR(policy.capacity(), 10.0, 1e-9);
  c.min_capacity_ratio = 0.25;  // the default: cuts go on down to a quarter
  SloPolicy learning(c);
  // Violations at 80 % of mu each time: the replicas miss at a load mu says they carry.
  for (int tick = 0; tick < 40; ++tick) {
    learning.Evaluate(SloInput(150.0 * tick, 4, {4 * 0.8 * learning.capacity(), 0, 5, 0.2}));
  }
  EXPECT_NEAR(learning.capacity(), 2.5, 1e-9);
}

// A violation at a load above mu says the fleet was short (a cold start's queue, the first
// minutes of a heavier mix), which mu already said: it must not cut mu, or every later fleet
// is sized for replicas slower than they are (issue 43: the fleet stayed at 2-3x the static
// fleet's size for a quarter of an hour after a mix shift).
TEST(SloPolicyTest, ViolationsAtALoadAboveMuDoNotCutIt) {
  auto c = Config();
  c.learn_capacity = true;
  SloPolicy policy(c);
  policy.Evaluate(SloInput(0, 4, {60, 30, 5, 0.6}));  // 15 req/s per replica, mu 10: short
  EXPECT_NEAR(policy.capacity(), 10.0, 1e-9);
  policy.Evaluate(SloInput(150, 4, {38, 0, 5, 0.2}));  // 9.5 req/s per replica: mu too high
  EXPECT_NEAR(policy.capacity(), 9.0, 1e-9);
}

// A cut is evidence from one stretch of load: where the SLO holds afterwards, mu returns to
// the load-test figure (half the gap per 5 minutes), even at loads too light to probe.
TEST(SloPolicyTest, ACutCapacityRecoversTowardTheInitialFigureWhileTheSloHolds) {
  auto c = Config();
  c.learn_capacity = true;
  SloPolicy policy(c);
  policy.Evaluate(SloInput(0, 4, {36, 0, 5, 0.2}));  // cut to 9
  ASSERT_NEAR(policy.capacity(), 9.0, 1e-9);
  // Clean ticks at 5 req/s per replica from 150 s (past the cut's cooldown) to 450 s: 450 s
  // since the cut's tick, a half-life and a half.
  for (double t = 150; t <= 450; t += 15) policy.Evaluate(SloInput(t, 4, {20}));
  EXPECT_NEAR(policy.capacity(), 10.0 - 1.0 * std::exp2(-450.0 / 300), 1e-6);
  for (double t = 465; t <= 4000; t += 15) policy.Evaluate(SloInput(t, 4, {20}));
  EXPECT_NEAR(policy.capacity(), 10.0, 1e-3);
  EXPECT_LE(policy.capacity(), 10.0);  // recovery stops at the figure; only loads go past it
}

TEST(SloPolicyTest, LearnsHigherCapacityWhenSloHoldsAboveEstimate) {
  auto c = Config();
  c.learn_capacity = true;
  SloPolicy policy(c);
  policy.Evaluate(SloInput(0, 4, {48}));  // 12 req/s per replica, no violations
  EXPECT_NEAR(policy.capacity(), 12.0, 1e-9);
}

// A clean minute at a light load says nothing about mu; only loads near it are probed.
TEST(SloPolicyTest, ProbesCapacityUpOnlyAtLoadsNearTheEstimate) {
  auto c = Config();
  c.learn_capacity = true;
  c.probe_load_ratio = 0.8;
  SloPolicy policy(c);
  for (int tick = 0; tick < 20; ++tick) policy.Evaluate(SloInput(15.0 * tick, 4, {30}));  // 7.5/s
  EXPECT_NEAR(policy.capacity(), 10.0, 1e-9);
  for (int tick = 20; tick < 40; ++tick) policy.Evaluate(SloInput(15.0 * tick, 4, {34}));  // 8.5/s
  // Probed 0.5 % a tick while 8.5/s was above 80 % of mu: mu stops just past 8.5 / 0.8.
  EXPECT_GT(policy.capacity(), 8.5 / 0.8);
  EXPECT_LE(policy.capacity(), 8.5 / 0.8 * 1.005);
  c.probe_load_ratio = 1;  // off: mu stays until a load above it holds the SLO
  SloPolicy fixed(c);
  for (int tick = 0; tick < 20; ++tick) fixed.Evaluate(SloInput(15.0 * tick, 4, {38}));
  EXPECT_NEAR(fixed.capacity(), 10.0, 1e-9);
}

TEST(SloPolicyTest, StaysWithinBounds) {
  auto c = Config();
  c.max_replicas = 6;
  SloPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(SloInput(0, 4, {500})).desired_replicas, 6);
  SloPolicy idle(Config());
  EXPECT_EQ(idle.Evaluate(SloInput(0, 1, {0, 0, 0})).desired_replicas, 1);
}

// A rising trend buys replicas a cold start ahead only when the history confirms it: one
// window that jumps after two flat minutes is mostly noise, a steady ramp is not.
TEST(SloPolicyTest, ExtrapolatesOnlyATrendTheHistoryConfirms) {
  auto c = Config();
  c.forecast_horizon = Seconds{90};
  auto jump_at_end = [&](Seconds trend_window) {
    c.trend_window = trend_window;
    SloPolicy policy(c);
    for (int t = 0; t <= 120; t += 15) policy.Evaluate(SloInput(t, 5, {50}));
    auto in = SloInput(135, 5, {60});
    in.metrics[std::string(names::kSuccessRate2m)].service_value = 50;
    return policy.Evaluate(in).desired_replicas;
  };
  // Window difference alone: 60 + (10 / 45) * 90 = 80 -> 8. Confirmed by the 2-minute
  // least-squares slope (0.036 req/s per s): 60 + 3.3 -> 7.
  EXPECT_EQ(jump_at_end(Seconds{0}), 8);
  EXPECT_EQ(jump_at_end(Seconds{120}), 7);

  c.trend_window = Seconds{120};
  SloPolicy ramp(c);
  int desired = 0;
  for (int t = 0; t <= 120; t += 15) {  // +2 req/s every 15 s, the long window 45 s behind
    auto in = SloInput(t, 5, {40 + t * 2.0 / 15});
    in.metrics[std::string(names::kSuccessRate2m)].service_value = 40 + (t - 45) * 2.0 / 15;
    desired = ramp.Evaluate(in).desired_replicas;
  }
  // 56 + (2 / 15) * 90 = 68 -> 7: the whole trend counts.
  EXPECT_EQ(desired, 7);
}

// follow_short_rate off: a 30 s burst (and the trend it implies) buys nothing; the 2-minute
// rate, the spare replicas and the backlog still do.
TEST(SloPolicyTest, LongRateAloneIgnoresAShortBurst) {
  auto c = Config();
  c.forecast_horizon = Seconds{90};
  auto burst = [](double waiting) {
    auto in = SloInput(0, 5, {90, waiting});
    in.metrics[std::string(names::kSuccessRate2m)].service_value = 50;
    return in;
  };
  SloPolicy follows(c);
  // max(90, 50) + (40 / 45) * 90 = 170 -> 17.
  EXPECT_EQ(follows.Evaluate(burst(0)).desired_replicas, 17);
  c.follow_short_rate = false;
  c.spare_replicas = 1;
  SloPolicy long_only(c);
  EXPECT_EQ(long_only.Evaluate(burst(0)).desired_replicas, 6);  // 50 -> 5, + 1 spare
  SloPolicy queued(c);
  // 6 waiting on each of 5 replicas: + 30 / 30 s -> 51 -> 6, + 1 spare.
  EXPECT_EQ(queued.Evaluate(burst(6)).desired_replicas, 7);
}

// Knative's panic mode, without a mode: from near-idle a load that shows gets its whole fleet
// in one tick, not a replica per tick.
TEST(SloPolicyTest, StepsFromNearIdleToTheWholeNeedInOneTick) {
  SloPolicy policy(Config());
  EXPECT_EQ(policy.Evaluate(SloInput(0, 1, {0.1, 0, 0})).desired_replicas, 1);
  EXPECT_EQ(policy.Evaluate(SloInput(15, 1, {0.1, 0, 0})).desired_replicas, 1);
  // 95 req/s at 10 per replica, plus the 40 waiting on the one replica drained over 30 s.
  auto d = policy.Evaluate(SloInput(30, 1, {95, 40, 0}));
  EXPECT_GE(d.desired_replicas, 10) << d.reason;
}

TEST(SloPolicyTest, KeepsSpareReplicasWarm) {
  auto c = Config();
  c.spare_replicas = 2;
  SloPolicy policy(c);
  EXPECT_EQ(policy.Evaluate(SloInput(0, 4, {95})).desired_replicas, 12);
}

// Token mode: the same request rate with twice the prompt tokens is (almost) twice the load.
TEST(SloPolicyTest, TokenModeCountsPromptAndWeightedOutputTokens) {
  auto c = Config();
  c.output_token_weight = 2;
  c.initial_capacity_tokens_per_second = 10000;
  SloPolicy policy(c);
  // 50 req/s x (800 prompt + 2 x 100 generated) = 50,000 tokens/s -> 5 replicas.
  EXPECT_EQ(policy.Evaluate(WithTokens(SloInput(0, 5, {50}), 40000, 5000)).desired_replicas, 5);
  // Prompts of 1,600 tokens: 50 x 1,800 = 90,000 tokens/s -> 9 replicas.
  auto d = policy.Evaluate(WithTokens(SloInput(15, 5, {50}), 80000, 5000));
  EXPECT_EQ(d.desired_replicas, 9);
  EXPECT_NE(d.reason.find("tokens/s"), std::string::npos) << d.reason;
}

TEST(CapacityAtMixTest, IsExactAtAProfiledMixAndBlendsBetween) {
  const std::vector<MixCapacity> mixes = {{256, 64, 44000}, {1024, 256, 34000}, {4096, 64, 25000}};
  EXPECT_DOUBLE_EQ(CapacityAtMix(mixes, 1024, 256), 34000);
  EXPECT_DOUBLE_EQ(CapacityAtMix(mixes, 4096, 64), 25000);
  // Between the short and the conv-like mix: between their capacities, nearer the nearer.
  const double between = CapacityAtMix(mixes, 400, 100);
  EXPECT_GT(between, 34000);
  EXPECT_LT(between, 44000);
  EXPECT_GT(CapacityAtMix(mixes, 300, 70), between);
  // Far outside: within the profile's range, never extrapolated.
  EXPECT_GE(CapacityAtMix(mixes, 100000, 10), 25000);
  EXPECT_LE(CapacityAtMix(mixes, 1, 1), 44000);
}

// With a profile's capacities per mix, a mix served at a lower capacity per work unit counts
// as more load: long prompts at the same work rate need more replicas than the chat mix.
TEST(SloPolicyTest, TokenModeScalesTheLoadByTheProfilesCapacityAtTheMix) {
  auto c = Config();
  c.output_token_weight = 2;
  c.initial_capacity_tokens_per_second = 30000;
  c.mix_capacities = {{1000, 100, 30000}, {4000, 25, 20000}};
  SloPolicy policy(c);
  // 100 req/s of 1,000 / 100: 120,000 units/s at 30,000 per replica -> 4 replicas.
  EXPECT_EQ(policy.Evaluate(WithTokens(SloInput(0, 4, {100}), 100000, 10000)).desired_replicas, 4);
  // 29.2 req/s of 4,000 / 25: ~118,000 units/s, but this mix runs at 20,000 per replica -> 6.
  auto d = policy.Evaluate(WithTokens(SloInput(15, 4, {29.2}), 116800, 730));
  EXPECT_EQ(d.desired_replicas, 6) << d.reason;
  EXPECT_NE(d.reason.find("this mix costs x1.5 (profile)"), std::string::npos) << d.reason;
}

TEST(SloPolicyTest, TokenModeHoldsUntilTokenRatesArrive) {
  auto c = Config();
  c.output_token_weight = 2;
  c.initial_capacity_tokens_per_second = 10000;
  SloPolicy policy(c);
  auto d = policy.Evaluate(SloInput(0, 3, {50}));  // no token counters
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_NE(d.reason.find("no token-rate data yet"), std::string::npos) << d.reason;
}

}  // namespace
}  // namespace gpuscale::scale
