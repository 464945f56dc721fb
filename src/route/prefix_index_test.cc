#include "route/prefix_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::route {
namespace {

TEST(PrefixIndexTest, MatchesTheLeadingRunRoutedToThatReplica) {
  PrefixIndex index(100, 60);
  const std::vector<uint64_t> sent = {11, 12, 13};
  index.Record(1, sent, 0);
  EXPECT_EQ(index.Match(1, std::vector<uint64_t>{11, 12, 13, 14}, 1), 3);
  EXPECT_EQ(index.Match(1, std::vector<uint64_t>{11, 99, 13}, 1), 1);  // stops at the first miss
  EXPECT_EQ(index.Match(2, sent, 1), 0);                               // another replica
}

TEST(PrefixIndexTest, EntriesExpireAfterTheTtlUnlessRoutedAgain) {
  PrefixIndex index(100, 60);
  const std::vector<uint64_t> a = {1, 2};
  index.Record(7, a, 0);
  EXPECT_EQ(index.Match(7, a, 60), 2);
  EXPECT_EQ(index.Match(7, a, 60.5), 0);
  index.Record(7, std::vector<uint64_t>{1}, 50);  // the head refreshed, the tail not
  EXPECT_EQ(index.Match(7, a, 100), 1);
}

TEST(PrefixIndexTest, MatchWithinCountsOnlyEntriesYoungerThanTheAgeAsked) {
  PrefixIndex index(100, 60);
  index.Record(1, std::vector<uint64_t>{1, 2}, 0);
  index.Record(1, std::vector<uint64_t>{1}, 8);  // the head routed again later
  const std::vector<uint64_t> a = {1, 2};
  EXPECT_EQ(index.MatchWithin(1, a, 10, 10), 2);
  EXPECT_EQ(index.MatchWithin(1, a, 10, 9.5), 1);   // 2 is 10 s old
  EXPECT_EQ(index.MatchWithin(1, a, 10, 1), 0);     // 1 is 2 s old
  EXPECT_EQ(index.MatchWithin(1, a, 65, 1000), 1);  // never past the ttl
}

TEST(PrefixIndexTest, EraseForgetsOnlyTheKeysNamed) {
  PrefixIndex index(100, 60);
  index.Record(1, std::vector<uint64_t>{1, 2, 3}, 0);
  index.Record(2, std::vector<uint64_t>{1, 2, 3}, 0);
  index.Erase(1, std::vector<uint64_t>{2, 99});
  EXPECT_EQ(index.BlocksOf(1), 2);
  EXPECT_EQ(index.Match(1, std::vector<uint64_t>{1, 2, 3}, 1), 1);
  EXPECT_EQ(index.Match(1, std::vector<uint64_t>{3}, 1), 1);
  EXPECT_EQ(index.Match(2, std::vector<uint64_t>{1, 2, 3}, 1), 3);
  index.Record(1, std::vector<uint64_t>{4, 5, 6, 7}, 2);  // the erased nodes left no debris
  EXPECT_EQ(index.BlocksOf(1), 6);
}

TEST(PrefixIndexTest, CapacityForgetsTheLeastRecentlyRoutedTailFirst) {
  PrefixIndex index(3, 1000);
  index.Record(1, std::vector<uint64_t>{1, 2}, 0);
  index.Record(1, std::vector<uint64_t>{5}, 1);
  index.Record(1, std::vector<uint64_t>{6}, 2);  // over capacity: 2 goes, 1 stays
  EXPECT_EQ(index.BlocksOf(1), 3);
  EXPECT_EQ(index.Match(1, std::vector<uint64_t>{1, 2}, 3), 1);
  EXPECT_EQ(index.Match(1, std::vector<uint64_t>{5}, 3), 1);
}

TEST(PrefixIndexTest, ForgetDropsAReplicaThatLeft) {
  PrefixIndex index(10, 60);
  index.Record(1, std::vector<uint64_t>{1}, 0);
  index.Record(2, std::vector<uint64_t>{1}, 0);
  index.Forget(1);
  EXPECT_EQ(index.Match(1, std::vector<uint64_t>{1}, 0), 0);
  EXPECT_EQ(index.Match(2, std::vector<uint64_t>{1}, 0), 1);
}

}  // namespace
}  // namespace gpuscale::route
