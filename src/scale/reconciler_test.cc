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
