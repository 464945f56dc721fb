#include "route/picker.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <vector>

namespace gpuscale::route {
namespace {

constexpr double kWarm = -std::numeric_limits<double>::infinity();

TEST(RouterLoadTest, WithoutSlowStartItIsTheOutstandingCount) {
  EXPECT_EQ(RouterLoad(0, 100, 100, 0), 0);
  EXPECT_EQ(RouterLoad(37, kWarm, 100, 0), 37);
}

struct SlowStartCase {
  int outstanding;
  double age_s;  // since the replica became ready
  double expected;
};

TEST(RouterLoadTest, SlowStartDividesByAWeightRampingFromATenthToOne) {
  const double window = 20, now = 1000;
  for (const SlowStartCase& c : {
           SlowStartCase{0, 0, 10},   // weight 0.1 at once: worth 1 / 0.1
           SlowStartCase{4, 1, 50},   // 1 / 20 of the window is under the floor
           SlowStartCase{4, 5, 20},   // a quarter of the way: weight 0.25
           SlowStartCase{9, 10, 20},  // half-way
           SlowStartCase{9, 20, 10},  // the window is over: outstanding + 1
           SlowStartCase{9, 500, 10},
       }) {
    EXPECT_DOUBLE_EQ(RouterLoad(c.outstanding, now - c.age_s, now, window), c.expected)
        << c.outstanding << " requests, " << c.age_s << " s old";
  }
  // Replicas warm before the run: full weight from t = 0.
  EXPECT_DOUBLE_EQ(RouterLoad(9, kWarm, 0, window), 10);
}

TEST(RouterLoadTest, AFreshReplicaTakesATenthOfAWarmOnesShareAtFirst) {
  // A warm replica holding 80 requests against one just ready: the fresh one is chosen
  // while (n + 1) / 0.1 < 81, i.e. for its first 8 requests, not for the next 80.
  int fresh = 0;
  while (RouterLoad(fresh, 100, 100, 20) < RouterLoad(80, kWarm, 100, 20)) ++fresh;
  EXPECT_EQ(fresh, 8);
}

TEST(PickerTest, NoCandidateNoPick) {
  Picker picker;
  EXPECT_FALSE(picker.Pick({}, 0).has_value());
}

TEST(PickerTest, LeastOutstandingTiesGoToTheEarliestCandidate) {
  Picker picker;
  std::vector<Candidate> c = {{3, kWarm, 1}, {1, kWarm, 2}, {1, kWarm, 3}};
  EXPECT_EQ(picker.Pick(c, 0), 1u);
  c[1].outstanding = 5;
  EXPECT_EQ(picker.Pick(c, 0), 2u);
}

TEST(PickerTest, SlowStartKeepsAFreshReplicaFromTakingEveryArrival) {
  Picker picker({.slow_start_seconds = 30});
  std::vector<Candidate> c = {{40, kWarm, 1}, {0, 100, 2}};
  int to_fresh = 0;
  for (int i = 0; i < 40; ++i) {
    const size_t chosen = *picker.Pick(c, 100);
    ++c[chosen].outstanding;
    if (chosen == 1) ++to_fresh;
  }
  // Weight 0.1: the fresh one counts (n + 1) * 10 against the warm one's growing count, so
  // it takes 7 of the 40 arrivals, not the 20 that would even the counts out.
  EXPECT_EQ(to_fresh, 7);
}

TEST(PickerTest, RoundRobinCycles) {
  Picker picker({.kind = PickerKind::kRoundRobin});
  std::vector<Candidate> c(3);
  EXPECT_EQ(picker.Pick(c, 0), 0u);
  EXPECT_EQ(picker.Pick(c, 0), 1u);
  EXPECT_EQ(picker.Pick(c, 0), 2u);
  EXPECT_EQ(picker.Pick(c, 0), 0u);
}

TEST(PickerTest, PrefixAffinitySendsAKeyToOneReplicaWhileItIsNotOverloaded) {
  Picker picker({.prefix_affinity = true});
  std::vector<Candidate> c = {{2, kWarm, HashText("a")}, {2, kWarm, HashText("b")},
                              {2, kWarm, HashText("c")}};
  const uint64_t key = HashText("You are a helpful assistant.");
  const size_t home = *picker.Pick(c, 0, key);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(picker.Pick(c, 0, key), home);
  // Loaded past 1.25x the mean (plus the new request), the key spills to another replica.
  c[home].outstanding = 10;
  const size_t spill = *picker.Pick(c, 0, key);
  EXPECT_NE(spill, home);
  // Without a key: least outstanding.
  EXPECT_NE(picker.Pick(c, 0), home);
}

TEST(PickerTest, PrefixAffinitySpreadsKeysAndMovesFewWhenAReplicaLeaves) {
  Picker picker({.prefix_affinity = true, .affinity_load_factor = 100});
  std::vector<Candidate> four;
  for (const char* id : {"r1", "r2", "r3", "r4"}) four.push_back({0, kWarm, HashText(id)});
  std::map<size_t, int> share;
  std::map<int, uint64_t> home_of;
  for (int k = 0; k < 400; ++k) {
    const size_t home = *picker.Pick(four, 0, HashText("prefix " + std::to_string(k)));
    ++share[home];
    home_of[k] = four[home].identity;
  }
  for (const auto& [replica, n] : share) EXPECT_GT(n, 60) << "replica " << replica;
  // r4 leaves: only its keys move.
  std::vector<Candidate> three(four.begin(), four.begin() + 3);
  int moved = 0;
  for (int k = 0; k < 400; ++k) {
    const size_t home = *picker.Pick(three, 0, HashText("prefix " + std::to_string(k)));
    if (three[home].identity != home_of[k]) ++moved;
    if (home_of[k] != four[3].identity) {
      EXPECT_EQ(three[home].identity, home_of[k]);
    }
  }
  EXPECT_EQ(moved, share[3]);
}

}  // namespace
}  // namespace gpuscale::route
