#include "alloc/gpu_selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "testing/alloc_test_util.h"

namespace gpuscale::alloc {
namespace {

using gpu::LinkLevel;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IdleSnapshot;
using testing::MakeGpu;
using testing::MakeSnapshot;
using ::testing::Not;

SelectionRequest Request(int count, int64_t min_mb = 0, double max_util = 100) {
  SelectionRequest r;
  r.gpu_count = count;
  r.min_memory_free_mb = min_mb;
  r.max_utilization_percent = max_util;
  return r;
}

std::vector<int> Select(const gpu::GpuSnapshot& s, const SelectionRequest& r) {
  Result<Selection> selection = SelectGpus(s, r);
  EXPECT_TRUE(selection.has_value()) << selection.error().ToString();
  return selection ? selection->Indices() : std::vector<int>{};
}

TEST(GpuSelectorTest, RanksByScoreBestFirst) {
  auto s = MakeSnapshot({MakeGpu(0, 10000, 50), MakeGpu(1, 80000, 0), MakeGpu(2, 40000, 10)});
  EXPECT_THAT(Select(s, Request(3)), ElementsAre(1, 2, 0));
}

SelectionRequest OfType(int count, std::string type) {
  SelectionRequest r = Request(count);
  r.gpu_type = std::move(type);
  return r;
}

TEST(GpuSelectorTest, SelectsOnlyGpusOfTheRequestedTypeThoughOthersRankHigher) {
  const gpu::GpuSnapshot s = testing::MixedSnapshot(2, 2);  // H100s 0-1 rank above A100s 2-3
  EXPECT_THAT(Select(s, Request(2)), ElementsAre(0, 1)) << "no type: as before, best first";
  EXPECT_THAT(Select(s, OfType(2, "A100-80GB")), ElementsAre(2, 3));
  Result<Selection> one = SelectGpus(s, OfType(1, "A100-80GB"));
  ASSERT_TRUE(one) << one.error().ToString();
  ASSERT_EQ(one->gpus.size(), 1u);
  EXPECT_EQ(one->gpus[0].type, "A100-80GB");
  EXPECT_EQ(one->gpus[0].price_per_hour, 1.29);
}

TEST(GpuSelectorTest, TypeWithTooFewGpusNamesTheTypeAndWhatIsFreeByType) {
  const gpu::GpuSnapshot s = testing::MixedSnapshot(3, 2);
  TakenGpus taken;
  const std::string holder = "job-a";
  taken.owner_of = [&](const std::string& key) { return key == "GPU-0" ? &holder : nullptr; };
  Result<Selection> l40s = SelectGpus(s, OfType(1, "L40S"), taken);
  ASSERT_FALSE(l40s);
  EXPECT_EQ(l40s.error().code, ErrorCode::kResourceExhausted);
  EXPECT_THAT(l40s.error().message,
              HasSubstr("need 1 GPU of type L40S, 0 of 5 eligible; free by type: A100-80GB 2, "
                        "H100-80GB 2;"));
  EXPECT_THAT(l40s.error().message, HasSubstr("GPU 3: type A100-80GB, not L40S"));
  Result<Selection> a100 = SelectGpus(s, OfType(3, "A100-80GB"), taken);
  ASSERT_FALSE(a100);
  EXPECT_THAT(a100.error().message, HasSubstr("need 3 GPUs of type A100-80GB, 2 of 5 eligible"));
}

TEST(GpuSelectorTest, BreaksScoreTiesByLowerIndex) {
  auto s = MakeSnapshot({MakeGpu(3, 40000, 20), MakeGpu(1, 40000, 20), MakeGpu(2, 40000, 20)});
  EXPECT_THAT(Select(s, Request(2)), ElementsAre(1, 2));
}

TEST(GpuSelectorTest, FiltersByFreeMemoryAndUtilization) {
  auto s = MakeSnapshot(
      {MakeGpu(0, 80000, 90), MakeGpu(1, 5000, 0), MakeGpu(2, 20000, 40), MakeGpu(3, 8000, 50)});
  // GPU 0 too busy, GPU 1 too little memory; 3 is exactly at both limits (inclusive).
  EXPECT_THAT(Select(s, Request(2, 8000, 50)), ElementsAre(2, 3));
}

TEST(GpuSelectorTest, FreeMemoryFallsBackToTotalMinusUsed) {
  gpu::GpuInfo g = MakeGpu(0, 0, 0);
  g.memory_free_mb.reset();
  g.memory_total_mb = 40000;
  g.memory_used_mb = 10000;
  Result<Selection> s = SelectGpus(MakeSnapshot({g}), Request(1, 30000));
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->gpus[0].memory_free_mb, 30000);
}

TEST(GpuSelectorTest, MissingReadingsFailOnlyTheFiltersThatNeedThem) {
  gpu::GpuInfo blind = MakeGpu(0, 0, 0);
  blind.memory_free_mb.reset();
  blind.memory_used_mb.reset();
  blind.utilization_percent.reset();
  auto s = MakeSnapshot({blind});
  EXPECT_THAT(Select(s, Request(1)), ElementsAre(0));  // no filters: still a GPU
  Result<Selection> r = SelectGpus(s, Request(1, 1000, 50));
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("free memory unknown, utilization unknown"));
}

TEST(GpuSelectorTest, ExhaustionMessageCountsAndExplainsEveryExcludedGpu) {
  auto s = MakeSnapshot(
      {MakeGpu(0, 80000, 0), MakeGpu(1, 2048, 10), MakeGpu(2, 70000, 95), MakeGpu(3, 1000, 99)});
  Result<Selection> r = SelectGpus(s, Request(3, 8000, 50));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(r.error().message,
            "need 3 GPUs, 1 of 4 eligible (min 8000 MiB free, max 50% utilization); excluded: "
            "GPU 1: 2048 MiB free < 8000 MiB required; GPU 2: utilization 95% > 50% max; "
            "GPU 3: 1000 MiB free < 8000 MiB required, utilization 99% > 50% max");
}

TEST(GpuSelectorTest, ExhaustionWithoutExclusionsSaysTheFleetIsTooSmall) {
  Result<Selection> r = SelectGpus(IdleSnapshot(2), Request(4));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "need 4 GPUs, 2 of 2 eligible; the simulated backend reports only 2 GPUs");
}

TEST(GpuSelectorTest, ExhaustionMessageIsCutForLargeFleets) {
  std::vector<gpu::GpuInfo> gpus;
  for (int i = 0; i < 100; ++i) gpus.push_back(MakeGpu(i, 100, 0));
  Result<Selection> r = SelectGpus(MakeSnapshot(gpus), Request(1, 8000));
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("GPU 19: 100 MiB free"));
  EXPECT_THAT(r.error().message, Not(HasSubstr("GPU 20:")));
  EXPECT_THAT(r.error().message, HasSubstr("and 80 more"));
}

TEST(GpuSelectorTest, TakenGpusAreExcludedWithTheirOwner) {
  auto s = IdleSnapshot(3);
  std::map<std::string, std::string> owners = {{"GPU-0", "job-7"}, {"GPU-2", "job-9"}};
  TakenGpus taken{[&](const std::string& key) -> const std::string* {
    auto it = owners.find(key);
    return it == owners.end() ? nullptr : &it->second;
  }};
  Result<Selection> one = SelectGpus(s, Request(1), taken);
  ASSERT_TRUE(one.has_value());
  EXPECT_THAT(one->Indices(), ElementsAre(1));
  Result<Selection> two = SelectGpus(s, Request(2), taken);
  ASSERT_FALSE(two.has_value());
  EXPECT_THAT(two.error().message, HasSubstr("GPU 0: leased to job-7; GPU 2: leased to job-9"));
}

TEST(GpuSelectorTest, RejectsInvalidRequestsNamingTheMember) {
  auto s = IdleSnapshot(1);
  EXPECT_EQ(SelectGpus(s, Request(0)).error().field, "gpu_count");
  EXPECT_EQ(SelectGpus(s, Request(1, -1)).error().field, "min_memory_free_mb");
  EXPECT_EQ(SelectGpus(s, Request(1, 0, 101)).error().field, "max_utilization_percent");
  SelectionRequest r = Request(1);
  r.weights = {0, 0};
  EXPECT_EQ(SelectGpus(s, r).error().code, ErrorCode::kInvalidArgument);
}

TEST(GpuSelectorTest, LeaseKeyIsUuidElseNodeAndIndex) {
  gpu::GpuInfo g = MakeGpu(3, 0, 0);
  EXPECT_EQ(LeaseKeyOf(g), "GPU-3");
  g.uuid.clear();
  EXPECT_EQ(LeaseKeyOf(g), "local#3");
  g.node = "node-a";
  EXPECT_EQ(LeaseKeyOf(g), "node-a#3");
}

// Eight GPUs as NVLink pairs (0,1) (2,3) (4,5) (6,7); pairs talk through a PCIe switch
// within a socket half (0-3, 4-7) and across sockets otherwise.
gpu::GpuTopology PairedTopology(int n) {
  gpu::GpuTopology t;
  t.levels.assign(n, std::vector<LinkLevel>(n, LinkLevel::kSystem));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j)
        t.levels[i][j] = LinkLevel::kSame;
      else if (i / 2 == j / 2)
        t.levels[i][j] = LinkLevel::kNvLink;
      else if (i / 4 == j / 4)
        t.levels[i][j] = LinkLevel::kSingleSwitch;
    }
  }
  return t;
}

TEST(GpuSelectorTest, TopologyPrefersNvLinkPairOverBetterScoredStrangers) {
  // By score alone GPUs 0 and 2 win; they are not NVLink peers.
  auto s = MakeSnapshot({MakeGpu(0, 80000, 0), MakeGpu(1, 60000, 30), MakeGpu(2, 79000, 0),
                         MakeGpu(3, 70000, 0), MakeGpu(4, 50000, 50), MakeGpu(5, 50000, 50),
                         MakeGpu(6, 50000, 50), MakeGpu(7, 50000, 50)});
  EXPECT_THAT(Select(s, Request(2)), ElementsAre(0, 2));  // no topology: by score
  s.topology = PairedTopology(8);
  // Pair (2,3) has the highest total score of the NVLink pairs.
  EXPECT_THAT(Select(s, Request(2)), ElementsAre(2, 3));
  // Four GPUs: one socket half (0-3) beats any cross-socket mix.
  EXPECT_THAT(Select(s, Request(4)), ElementsAre(0, 2, 3, 1));
}

TEST(GpuSelectorTest, TopologySkipsIneligiblePeers) {
  auto s = MakeSnapshot(
      {MakeGpu(0, 80000, 0), MakeGpu(1, 80000, 99), MakeGpu(2, 60000, 0), MakeGpu(3, 60000, 0)});
  s.topology = PairedTopology(4);
  EXPECT_THAT(Select(s, Request(2, 0, 50)), ElementsAre(2, 3));
}

TEST(GpuSelectorTest, MultiGpuRequestStaysOnOneNode) {
  // node-a GPU 0 is the best GPU overall, but node-b has the two-GPU room.
  auto s =
      MakeSnapshot({MakeGpu(0, 80000, 0, 81559, "node-a"), MakeGpu(1, 1000, 0, 81559, "node-a"),
                    MakeGpu(0, 70000, 0, 81559, "node-b"), MakeGpu(1, 70000, 0, 81559, "node-b")});
  Result<Selection> r = SelectGpus(s, Request(2, 8000));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[0].node, "node-b");
  EXPECT_EQ(r->gpus[1].node, "node-b");
}

TEST(GpuSelectorTest, SpansFewestNodesWhenNoNodeIsBigEnough) {
  auto s = MakeSnapshot({MakeGpu(0, 80000, 0, 81559, "a"), MakeGpu(0, 60000, 0, 81559, "b"),
                         MakeGpu(1, 60000, 0, 81559, "b"), MakeGpu(0, 79000, 0, 81559, "c")});
  Result<Selection> r = SelectGpus(s, Request(3));
  ASSERT_TRUE(r.has_value());
  std::multiset<std::string> nodes;
  for (const auto& g : r->gpus) nodes.insert(g.node);
  EXPECT_EQ(nodes.count("b"), 2u);  // the fullest node first, then the best of the rest
  EXPECT_EQ(nodes.count("a"), 1u);
}

}  // namespace
}  // namespace gpuscale::alloc
