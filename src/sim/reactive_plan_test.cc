#include "sim/reactive_plan.h"

#include <gtest/gtest.h>

#include "testing/bursty_trace.h"
#include "testing/fake_replica_model.h"

namespace gpuscale::sim {
namespace {

// Five 60 s buckets of 100 requests each (the target 0.99 allows 1 violation per bucket):
// bucket 0 needs 2 replicas, 1 and 2 need 3, 3 needs 2, 4 needs 1.
std::vector<FleetCurve> Curves() {
  return {{1, {50, 0}, 100, 60},
          {1, {80, 30, 0}, 100, 60},
          {2, {40, 1, 0}, 100, 60},
          {1, {20, 0}, 100, 60},
          {1, {0}, 100, 60}};
}

ReactiveSetting Setting(int lag, double cold_start_s) {
  ReactiveSetting s;
  s.target_ratio = 0.99;
  s.lag_buckets = lag;
  s.initial_replicas = 2;
  s.max_replicas = 8;
  s.cold_start_s = cold_start_s;
  return s;
}

TEST(ReactivePlanTest, EachBucketNeedsTheSmallestFleetMeetingTheTarget) {
  EXPECT_EQ(BucketNeeds(Curves(), 0.99), (std::vector<int>{2, 3, 3, 2, 1}));
  // No fleet on the curve meets it: the largest; an empty bucket: the smallest.
  EXPECT_EQ(BucketNeeds({{3, {9, 7}, 100, 60}, {1, {0}, 0, 60}}, 0.99), (std::vector<int>{4, 1}));
  const FleetCurve c{2, {40, 1, 0}, 100, 60};
  struct Case {
    int n, want;
  };
  for (const Case& k : {Case{1, 40}, Case{2, 40}, Case{3, 1}, Case{4, 0}, Case{9, 0}}) {
    EXPECT_EQ(CurveViolations(c, k.n), k.want) << k.n;
  }
}

TEST(ReactivePlanTest, FollowsThePastNeedsWithTheCheapestHeadroomMeetingTheTarget) {
  // Lag 1: bucket b runs need[b - 1] + spare. Spare 0 gives bucket 1 two replicas (30
  // violations); spare 1 gives 2, 3, 4, 4, 3 and none: 16 replica-minutes.
  ReactivePlan p = CheapestReactivePlan(Curves(), Setting(1, 0));
  EXPECT_TRUE(p.meets_target);
  EXPECT_EQ(p.hold_buckets, 1);
  EXPECT_EQ(p.spare_replicas, 1);
  EXPECT_EQ(p.replicas, (std::vector<int>{2, 3, 4, 4, 3}));
  EXPECT_DOUBLE_EQ(p.attainment, 1.0);
  EXPECT_NEAR(p.gpu_hours, 16 * 60 / 3600.0, 1e-12);
  // Without headroom (2, 2, 3, 3, 2): bucket 1's 30 violations and bucket 2's one.
  EXPECT_DOUBLE_EQ(p.no_headroom_attainment, 1 - 31.0 / 500);
}

TEST(ReactivePlanTest, ALateReactionThatCannotMeetTheTargetReportsTheBestAttainment) {
  // Lag 2: bucket 1 still runs the 2 initial replicas (30 of 500 requests violate, whatever
  // the headroom); spare 2 is the cheapest clearing the rest: 2, 2, 4, 5, 5, plus the cold
  // starts of the rises (two replicas for bucket 2, one for bucket 3: 3 x 60 s).
  ReactivePlan p = CheapestReactivePlan(Curves(), Setting(2, 60));
  EXPECT_FALSE(p.meets_target);
  EXPECT_DOUBLE_EQ(p.attainment, 1 - 30.0 / 500);
  EXPECT_EQ(p.spare_replicas, 2);
  EXPECT_EQ(p.replicas, (std::vector<int>{2, 2, 4, 5, 5}));
  EXPECT_NEAR(p.gpu_hours, (18 * 60 + 3 * 60) / 3600.0, 1e-12);
}

TEST(ReactivePlanTest, HoldingANeedCanBeCheaperThanSpareReplicas) {
  // The need alternates 4, 1, 4, 1, ...: following it a bucket late is always wrong (3
  // spares: 4, 7, 4, 7, ... = 44 replica-minutes), holding the last two buckets' largest
  // need is right (4 throughout: 32).
  std::vector<FleetCurve> curves;
  for (int b = 0; b < 8; ++b) {
    curves.push_back(b % 2 == 1 ? FleetCurve{1, {0}, 100, 60}
                                : FleetCurve{1, {90, 60, 30, 0}, 100, 60});
  }
  ReactiveSetting s = Setting(1, 0);
  s.initial_replicas = 4;
  ReactivePlan p = CheapestReactivePlan(curves, s);
  EXPECT_TRUE(p.meets_target);
  EXPECT_EQ(p.hold_buckets, 2);
  EXPECT_EQ(p.spare_replicas, 0);
  EXPECT_EQ(p.replicas, (std::vector<int>(8, 4)));
}

TEST(ReactivePlanTest, SettingFollowsTheServiceAndTheBucket) {
  SimulationConfig config;
  config.service.cold_start = Seconds{60};
  config.service.min_replicas = 3;
  config.service.max_replicas = 12;
  config.service.gpus_per_replica = 2;
  struct Case {
    double cold_start_s, bucket_s;
    int lag;
  };
  for (const Case& c :
       {Case{60, 60, 2}, Case{0, 60, 1}, Case{30, 60, 2}, Case{61, 60, 3}, Case{60, 15, 5}}) {
    config.service.cold_start = Seconds{c.cold_start_s};
    EXPECT_EQ(ReactiveSettingFor(config, c.bucket_s).lag_buckets, c.lag)
        << c.cold_start_s << " / " << c.bucket_s;
  }
  const ReactiveSetting s = ReactiveSettingFor(config, 60);
  EXPECT_EQ(s.initial_replicas, 3);  // initial_replicas -1: min_replicas
  EXPECT_EQ(s.max_replicas, 4);  // the default cluster, one node of 8 GPUs, places 4
  config.cluster.nodes = 4;
  EXPECT_EQ(ReactiveSettingFor(config, 60).max_replicas, 12);
  EXPECT_EQ(s.gpus_per_replica, 2);
  EXPECT_DOUBLE_EQ(s.target_ratio, config.slo.target_ratio);
  EXPECT_DOUBLE_EQ(s.bucket_s, 60);
}

TEST(ReactivePlanTest, NeverCheaperThanTheOracleBound) {
  testing::AffineReplicaModel model;
  SimulationConfig config;
  config.cluster = {2, 8, "H100", 81559};
  config.service.min_replicas = 1;
  config.service.max_replicas = 16;
  config.service.cold_start = Seconds{30};
  config.service.initial_replicas = 8;  // warm: the first two minutes run what is there
  auto trace = testing::BurstyTrace(900);
  auto bound = ComputeOracleBound(config, model, trace, trace.requests.back().arrival_s);
  ASSERT_TRUE(bound) << bound.error().ToString();
  ReactivePlan p = CheapestReactivePlan(bound->curves, ReactiveSettingFor(config, bound->bucket_s));
  ASSERT_TRUE(p.meets_target) << p.attainment << " hold " << p.hold_buckets << " spare "
                              << p.spare_replicas << " lag " << p.lag_buckets;
  EXPECT_EQ(p.replicas.size(), bound->replicas.size());
  // Its schedule, cold starts included, is one the oracle's linear program could have chosen.
  EXPECT_GE(p.gpu_hours, bound->gpu_hours);
}

}  // namespace
}  // namespace gpuscale::sim
