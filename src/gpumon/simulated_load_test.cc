#include "gpumon/simulated_load.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpumon/simulated_backend.h"

namespace gpuscale::gpu {
namespace {

GpuInfo Gpu(int index, std::optional<int64_t> total, std::optional<int64_t> used) {
  GpuInfo gpu;
  gpu.index = index;
  gpu.memory_total_mb = total;
  gpu.memory_used_mb = used;
  if (total && used) gpu.memory_free_mb = *total - *used;
  gpu.utilization_percent = 0;
  return gpu;
}

struct ApplyCase {
  std::string name;
  GpuInfo gpu;
  GpuLoad load;
  std::optional<int64_t> used, free;
  double utilization;
};

TEST(SimulatedLoadTest, AddsTheLoadWithinTheGpusLimits) {
  const std::vector<ApplyCase> cases = {
      {"adds to the inventory's memory", Gpu(0, 81559, 1000), {37.5, 23450}, 24450, 57109, 37.5},
      {"memory capped at the total", Gpu(0, 1000, 200), {10, 5000}, 1000, 0, 10},
      {"utilization capped at 100", Gpu(0, 81559, 0), {250, 0}, 0, 81559, 100},
      {"negative loads count as none", Gpu(0, 81559, 0), {-5, -10}, 0, 81559, 0},
      {"no total: used only", Gpu(0, std::nullopt, std::nullopt), {1, 300}, 300, std::nullopt, 1},
  };
  for (const ApplyCase& c : cases) {
    GpuSnapshot snapshot;
    snapshot.gpus = {c.gpu};
    ApplyLoad(snapshot, {{0, c.load}});
    EXPECT_EQ(snapshot.gpus[0].memory_used_mb, c.used) << c.name;
    EXPECT_EQ(snapshot.gpus[0].memory_free_mb, c.free) << c.name;
    EXPECT_EQ(snapshot.gpus[0].utilization_percent, c.utilization) << c.name;
  }
}

TEST(SimulatedLoadTest, LeavesUnloadedGpusAndIgnoresUnknownIndices) {
  GpuSnapshot snapshot;
  snapshot.gpus = {Gpu(0, 100, 10), Gpu(1, 100, 20)};
  ApplyLoad(snapshot, {{1, {50, 5}}, {7, {50, 5}}});
  EXPECT_EQ(snapshot.gpus[0].memory_used_mb, 10);
  EXPECT_EQ(snapshot.gpus[0].utilization_percent, 0);
  EXPECT_EQ(snapshot.gpus[1].memory_used_mb, 25);
  EXPECT_EQ(snapshot.gpus[1].utilization_percent, 50);
}

// The board replaces every load at once: a GPU whose replica is gone reads its inventory
// values again on the next query.
TEST(SimulatedLoadTest, BackendShowsTheBoardsCurrentLoads) {
  auto board = std::make_shared<GpuLoadBoard>();
  LoadedSimulatedBackend backend(std::make_unique<SimulatedBackend>(), board);
  EXPECT_EQ(backend.Name(), "simulated");
  board->Set("services", {{2, {40, 2048}}});
  Result<GpuSnapshot> loaded = backend.Query(Seconds{1});
  ASSERT_TRUE(loaded.has_value()) << loaded.error().ToString();
  EXPECT_EQ(loaded->gpus[2].utilization_percent, 40);
  EXPECT_EQ(loaded->gpus[2].memory_used_mb, 2048);
  EXPECT_EQ(loaded->gpus[0].memory_used_mb, 0);
  board->Set("services", {});
  Result<GpuSnapshot> idle = backend.Query(Seconds{2});
  ASSERT_TRUE(idle.has_value());
  EXPECT_EQ(idle->gpus[2].memory_used_mb, 0);
  EXPECT_EQ(idle->gpus[2].utilization_percent, 0);
}

// Each replica on a GPU shows as a process of its own (nvidia-smi's process table), from
// every source, after whatever the inventory already lists.
TEST(SimulatedLoadTest, ProcessesOfEverySourceJoinTheGpusList) {
  GpuLoadBoard board;
  board.Set("services", {{0, {20, 1000, {{11, 1000, "chat replica 1"}}}}});
  board.Set("experiment-7", {{0, {30, 500, {{12, 500, "experiment #7"}}}}});
  GpuSnapshot snapshot;
  snapshot.gpus = {Gpu(0, 81559, 0)};
  snapshot.gpus[0].processes = {{5, 10, "inventory"}};
  ApplyLoad(snapshot, board.Get());
  const std::vector<GpuProcess> expected = {
      {5, 10, "inventory"}, {12, 500, "experiment #7"}, {11, 1000, "chat replica 1"}};
  EXPECT_EQ(snapshot.gpus[0].processes, expected);
  EXPECT_EQ(snapshot.gpus[0].memory_used_mb, 1500);
}

TEST(SimulatedLoadTest, BoardSumsItsSourcesUntilOneIsCleared) {
  GpuLoadBoard board;
  board.Set("services", {{0, {30, 1000}}, {1, {10, 100}}});
  board.Set("experiment-7", {{1, {20, 200}}});
  EXPECT_EQ(board.Get(), (GpuLoads{{0, {30, 1000}}, {1, {30, 300}}}));
  board.Clear("experiment-7");
  EXPECT_EQ(board.Get(), (GpuLoads{{0, {30, 1000}}, {1, {10, 100}}}));
  board.Set("services", {});
  EXPECT_TRUE(board.Get().empty());
}

}  // namespace
}  // namespace gpuscale::gpu
