#include "scale/reconciler.h"

#include <gtest/gtest.h>

namespace gpuscale::scale {
namespace {

using Kind = ReplicaAction::Kind;
using P = ReplicaPhase;

ReplicaStatus R(std::string id, P phase, int outstanding = 0, double since = 0) {
  return {std::move(id), phase, Seconds{since}, outstanding};
}

std::string Summary(const std::vector<ReplicaAction>& actions) {
  std::string out;
  for (const auto& a : actions) {
    if (!out.empty()) out += " ";
    out += std::string(ActionKindName(a.kind)) + (a.replica_id.empty() ? "" : ":" + a.replica_id);
  }
  return out;
}

TEST(ReconcilerTest, StartsMissingReplicas) {
  auto actions = PlanReconcile(3, {R("a", P::kReady)}, Seconds{0}, {});
  EXPECT_EQ(Summary(actions), "start start");
}

TEST(ReconcilerTest, ResumesDrainingBeforeStarting) {
  auto actions = PlanReconcile(
      3, {R("a", P::kReady), R("b", P::kDraining, 1), R("c", P::kDraining, 5)}, Seconds{0}, {});
  EXPECT_EQ(Summary(actions), "resume:c resume:b");
}

TEST(ReconcilerTest, ScaleInCancelsPendingThenStartingThenDrainsLeastLoaded) {
  std::vector<ReplicaStatus> replicas = {R("a", P::kReady, 4), R("b", P::kReady, 1),
                                         R("c", P::kStarting), R("d", P::kPending)};
  EXPECT_EQ(Summary(PlanReconcile(3, replicas, Seconds{0}, {})), "stop:d");
  EXPECT_EQ(Summary(PlanReconcile(2, replicas, Seconds{0}, {})), "stop:d stop:c");
  EXPECT_EQ(Summary(PlanReconcile(1, replicas, Seconds{0}, {})), "stop:d stop:c drain:b");
}

TEST(ReconcilerTest, DrainsNewestAmongEquallyLoaded) {
  auto actions = PlanReconcile(1, {R("a", P::kReady, 2), R("b", P::kReady, 2)}, Seconds{0}, {});
  EXPECT_EQ(Summary(actions), "drain:b");
}

// A mixed fleet: replicas weigh their capacity (in reference replicas) and the most
// expensive per capacity (highest drain_rank) drains first.
ReplicaStatus Mixed(std::string id, P phase, double capacity, double rank, int outstanding = 0) {
  ReplicaStatus r = R(std::move(id), phase, outstanding);
  r.capacity = capacity;
  r.drain_rank = rank;
  return r;
}

TEST(ReconcilerTest, MixedFleetCountsCapacityAndDrainsTheHighestRankFirst) {
  const std::vector<ReplicaStatus> replicas = {Mixed("fast", P::kReady, 2, 0.8, 0),
                                               Mixed("slow", P::kReady, 0.8, 1.4, 5),
                                               Mixed("slow2", P::kReady, 0.8, 1.4, 9)};
  // 3.6 held: desired 3 keeps all (a slow one leaving would leave 2.8).
  EXPECT_EQ(Summary(PlanReconcile(3, replicas, Seconds{0}, {})), "");
  // Desired 2 and 1: both slow ones go (the less busy first), the cheaper fast one stays
  // despite its fewer requests; it alone meets 1 and 2.
  EXPECT_EQ(Summary(PlanReconcile(2, replicas, Seconds{0}, {})), "drain:slow drain:slow2");
  EXPECT_EQ(Summary(PlanReconcile(1, replicas, Seconds{0}, {})), "drain:slow drain:slow2");
  // Desired 3.6 in whole replicas is 4: one start for the missing 0.4.
  EXPECT_EQ(Summary(PlanReconcile(4, replicas, Seconds{0}, {})), "start");
  // Two fast replicas meet 4 with no start.
  EXPECT_EQ(Summary(PlanReconcile(4, {Mixed("a", P::kReady, 2, 0), Mixed("b", P::kStarting, 2, 0)},
                                  Seconds{0}, {})),
            "");
}

TEST(ReconcilerTest, StopsDrainedReplicaOnlyWhenEmptyOrTimedOut) {
  ReconcilerConfig config{Seconds{60}};
  std::vector<ReplicaStatus> replicas = {R("a", P::kReady), R("b", P::kDraining, 3, 10),
                                         R("c", P::kDraining, 0, 10)};
  EXPECT_EQ(Summary(PlanReconcile(1, replicas, Seconds{20}, config)), "stop:c");
  EXPECT_EQ(Summary(PlanReconcile(1, replicas, Seconds{70}, config)), "stop:b stop:c");
}

TEST(ReconcilerTest, RetriesPendingPlacementEveryTick) {
  auto actions = PlanReconcile(2, {R("a", P::kReady), R("b", P::kPending)}, Seconds{0}, {});
  EXPECT_EQ(Summary(actions), "place:b");
}

TEST(ReconcilerTest, HoldsWhenCountMatches) {
  EXPECT_TRUE(PlanReconcile(2, {R("a", P::kReady), R("b", P::kStarting)}, Seconds{0}, {}).empty());
}

TEST(ReconcilerTest, NegativeDesiredMeansZero) {
  EXPECT_EQ(Summary(PlanReconcile(-1, {R("a", P::kReady)}, Seconds{0}, {})), "drain:a");
}

}  // namespace
}  // namespace gpuscale::scale
