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

TEST(PickerTest, CapacityWeightsSplitArrivalsByCapacity) {
  // Two idle replicas, one twice as fast; every arrival stays in flight. The fast one must
  // hold twice the requests: 2:1 after 30 arrivals, and the first goes to it.
  std::vector<Candidate> candidates = {{0, kWarm, 1}, {0, kWarm, 2}};
  candidates[1].capacity_weight = 2;
  Picker picker;
  ASSERT_EQ(picker.Pick(candidates, 0), 1u);
  candidates[1].outstanding = 1;
  for (int i = 1; i < 30; ++i) ++candidates[*picker.Pick(candidates, 0)].outstanding;
  EXPECT_EQ(candidates[0].outstanding, 10);
  EXPECT_EQ(candidates[1].outstanding, 20);
  // Weight 1 everywhere is the plain count.
  EXPECT_EQ(RouterLoad(37, kWarm, 100, 0, 1), 37);
  EXPECT_DOUBLE_EQ(RouterLoad(3, kWarm, 100, 0, 2), 1);
}

// A long prompt goes to a replica that prefills it in time though it is busier; a short one
// to the least loaded; one that no replica takes in time to the least loaded of all.
TEST(PickerTest, LongPromptsGoToReplicasThatTakeThem) {
  std::vector<Candidate> candidates = {{0, kWarm, 1}, {5, kWarm, 2}, {3, kWarm, 3}};
  candidates[0].max_prompt_tokens = 4000;  // a slower type's
  candidates[2].max_prompt_tokens = 8000;
  for (PickerKind kind : {PickerKind::kLeastOutstanding, PickerKind::kPrefixCache}) {
    Picker picker(PickerSpec{kind});
    EXPECT_EQ(picker.Pick(candidates, 0, std::nullopt, 1000), 0u);
    EXPECT_EQ(picker.Pick(candidates, 0, std::nullopt, 6000), 2u);
    EXPECT_EQ(picker.Pick(candidates, 0, std::nullopt, 9000), 1u);
  }
  candidates[1].max_prompt_tokens = 8000;
  EXPECT_EQ(Picker().Pick(candidates, 0, std::nullopt, 9000), 0u);  // none takes it: all compete
}

TEST(PickerTest, NoCandidateNoPick) {
  Picker picker;
  EXPECT_FALSE(picker.Pick({}, 0).has_value());
}

struct LeastOutstandingCase {
  std::vector<int> outstanding;  // per candidate, oldest first
  size_t expected;
};

TEST(PickerTest, LeastOutstandingPicksTheMinimumTiesToTheEarliest) {
  // The minimum sits first, in the middle and last, so neither "always the first" nor
  // "always the last" passes; the ties check that the earliest of equals wins.
  for (const LeastOutstandingCase& c : {
           LeastOutstandingCase{{0, 0, 0}, 0},
           LeastOutstandingCase{{1, 4, 2}, 0},
           LeastOutstandingCase{{3, 1, 1}, 1},
           LeastOutstandingCase{{3, 5, 1}, 2},
           LeastOutstandingCase{{6, 2, 9, 2}, 1},
       }) {
    std::vector<Candidate> candidates;
    for (int n : c.outstanding) candidates.push_back({n, kWarm, 0});
    Picker picker;
    EXPECT_EQ(picker.Pick(candidates, 0), c.expected) << ::testing::PrintToString(c.outstanding);
  }
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

TEST(PickerTest, SlowStartWeighsAHalfWarmReplicaAtHalf) {
  // Half-way through a 30 s window the fresh replica (listed first) counts (n + 1) / 0.5
  // against the warm one's (10 + 1) / 1 = 11: with 4 in flight it is worth 10 and wins; with
  // 5 it is worth 12 and loses. Without slow start it would win both times.
  Picker picker({.slow_start_seconds = 30});
  std::vector<Candidate> c = {{4, 85, 1}, {10, kWarm, 2}};
  EXPECT_EQ(picker.Pick(c, 100), 0u);
  c[0].outstanding = 5;
  EXPECT_EQ(picker.Pick(c, 100), 1u);
  EXPECT_EQ(Picker().Pick(c, 100), 0u);
}

TEST(PickerTest, RoundRobinCycles) {
  Picker picker({.kind = PickerKind::kRoundRobin});
  std::vector<Candidate> c(3);
  EXPECT_EQ(picker.Pick(c, 0), 0u);
  EXPECT_EQ(picker.Pick(c, 0), 1u);
  EXPECT_EQ(picker.Pick(c, 0), 2u);
  EXPECT_EQ(picker.Pick(c, 0), 0u);
}

TEST(PickerTest, PrefixAffinityKeepsAKeyOnItsReplicaUnderTheBoundAndMovesItPast) {
  Picker picker({.prefix_affinity = true});
  std::vector<Candidate> c = {
      {2, kWarm, HashText("a")}, {2, kWarm, HashText("b")}, {3, kWarm, HashText("c")}};
  // This key's rendezvous order over a, b, c is c, b, a (read off the picker once and pinned
  // here), so its home is neither the least loaded replica nor the earliest.
  const uint64_t key = HashText("prompt 8");
  // Bound: ceil(1.25 * (7 + 1) / 3) = 4; c holds 3, with this request 4: still its home,
  // though least outstanding would pick a.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(picker.Pick(c, 0, key), 2u);
  // One more in flight on c: ceil(1.25 * (8 + 1) / 3) = 4 < 5, so the key moves to the next
  // replica in its order, b, not to the least loaded a.
  c[2].outstanding = 4;
  EXPECT_EQ(picker.Pick(c, 0, key), 1u);
  // Without a key: least outstanding, ties to the earliest.
  EXPECT_EQ(picker.Pick(c, 0), 0u);
}

TEST(PickerTest, PrefixAffinitySpreadsKeysAndMovesFewWhenAReplicaLeaves) {
  Picker picker({.prefix_affinity = true, .affinity_load_factor = 100});
  std::vector<Candidate> four;
  for (const char* id : {"r1", "r2", "r3", "r4"}) four.push_back({0, kWarm, HashText(id)});
  // Indexed by replica, so one that never gets a key shows up as a 0 share.
  std::vector<int> share(four.size());
  std::map<int, uint64_t> home_of;
  for (int k = 0; k < 400; ++k) {
    const size_t home = *picker.Pick(four, 0, HashText("prefix " + std::to_string(k)));
    ASSERT_LT(home, four.size());
    ++share[home];
    home_of[k] = four[home].identity;
  }
  // An even split is 100 each; rendezvous hashing gives 102, 100, 92 and 106.
  for (size_t replica = 0; replica < share.size(); ++replica) {
    EXPECT_GT(share[replica], 60) << "replica " << replica;
  }
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

namespace gpuscale::route {
namespace {

struct PrefixCacheCase {
  const char* name;
  std::vector<Candidate> candidates;  // outstanding, ready_since, identity, cached, pending
  int64_t prompt_tokens;
  size_t expected;
};

TEST(PickerTest, PrefixCacheMinimizesUncachedPlusPendingPrefillWithinTheBound) {
  Picker picker(PickerSpec{.kind = PickerKind::kPrefixCache});
  for (const PrefixCacheCase& c : {
           PrefixCacheCase{"the longest cached prefix wins at equal queues",
                           {{2, kWarm, 1, 0, 0}, {2, kWarm, 2, 4096, 0}, {2, kWarm, 3, 1024, 0}},
                           8000,
                           1},
           PrefixCacheCase{"a queue worth more than the hit sends it elsewhere",
                           {{2, kWarm, 1, 0, 0}, {2, kWarm, 2, 4096, 5000}},
                           8000,
                           0},
           PrefixCacheCase{"a queue worth less than the hit does not",
                           {{2, kWarm, 1, 0, 0}, {2, kWarm, 2, 4096, 3000}},
                           8000,
                           1},
           PrefixCacheCase{"no cache anywhere: least pending prefill",
                           {{1, kWarm, 1, 0, 900}, {3, kWarm, 2, 0, 100}},
                           500,
                           1},
           PrefixCacheCase{"equal costs: fewer outstanding",
                           {{3, kWarm, 1, 0, 0}, {1, kWarm, 2, 0, 0}},
                           500,
                           1},
           // Mean load (0 + 9 + 1) / 3 + 1: bound ceil(1.25 x 11 / 3) = 5; the holder of the
           // whole prefix has 9 and is skipped.
           PrefixCacheCase{"a hot prefix's holder over the load bound is skipped",
                           {{0, kWarm, 1, 0, 0}, {9, kWarm, 2, 8000, 0}, {1, kWarm, 3, 0, 0}},
                           8001,
                           0},
       }) {
    EXPECT_EQ(picker.Pick(c.candidates, 0, std::nullopt, c.prompt_tokens), c.expected) << c.name;
  }
}

}  // namespace
}  // namespace gpuscale::route
