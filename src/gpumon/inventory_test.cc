#include "gpumon/inventory.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpuscale::gpu {
namespace {

TEST(InventoryTest, ParsesYamlWithDefaultsAndExplicitNulls) {
  const char* text = R"(
gpus:
  - index: 1
    name: NVIDIA A100-SXM4-80GB
    memory_total_mb: 81920
    memory_used_mb: 20480
    utilization_percent: 55
    temperature_c: 61
    power_draw_w: null
    processes:
      - {pid: 4242, used_memory_mb: 20000, name: vllm}
  - index: 0
)";
  Result<Inventory> inventory = ParseInventory(text, "inv.yaml");
  ASSERT_TRUE(inventory) << inventory.error().ToString();
  ASSERT_EQ(inventory->gpus.size(), 2u);
  const GpuInfo& idle = inventory->gpus[0];  // sorted by index
  EXPECT_EQ(idle.index, 0);
  EXPECT_EQ(idle.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(idle.memory_total_mb, 81559);
  EXPECT_EQ(idle.memory_free_mb, 81559);
  EXPECT_EQ(idle.utilization_percent, 0.0);
  EXPECT_FALSE(idle.temperature_c);
  const GpuInfo& busy = inventory->gpus[1];
  EXPECT_EQ(busy.uuid, "GPU-sim-0001");
  EXPECT_EQ(busy.memory_free_mb, 81920 - 20480);
  EXPECT_EQ(busy.utilization_percent, 55.0);
  EXPECT_EQ(busy.temperature_c, 61.0);
  EXPECT_FALSE(busy.power_draw_w);
  ASSERT_EQ(busy.processes.size(), 1u);
  EXPECT_EQ(busy.processes[0].pid, 4242);
  EXPECT_EQ(busy.processes[0].used_memory_mb, 20000);
  EXPECT_FALSE(inventory->topology.Known());
}

TEST(InventoryTest, ParsesJsonAndTopology) {
  const char* text = R"({"gpus": [{"index": 0}, {"index": 1}],
                         "topology": [["same", "nvlink"], ["nvlink", "same"]]})";
  Result<Inventory> inventory = ParseInventory(text, "inv.json");
  ASSERT_TRUE(inventory) << inventory.error().ToString();
  ASSERT_TRUE(inventory->topology.Known());
  EXPECT_EQ(inventory->topology.levels[0][1], LinkLevel::kNvLink);
  EXPECT_EQ(inventory->topology.levels[1][1], LinkLevel::kSame);
}

struct BadInventory {
  const char* name;
  const char* text;
  const char* field;
  const char* message_has;
};

class InventoryErrorTest : public ::testing::TestWithParam<BadInventory> {};

TEST_P(InventoryErrorTest, NamesFieldAndLine) {
  const BadInventory& c = GetParam();
  Result<Inventory> inventory = ParseInventory(c.text, "inv.yaml");
  ASSERT_FALSE(inventory) << c.name;
  EXPECT_EQ(inventory.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(inventory.error().field, c.field) << inventory.error().ToString();
  EXPECT_NE(inventory.error().message.find(c.message_has), std::string::npos)
      << inventory.error().ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InventoryErrorTest,
    ::testing::Values(
        BadInventory{"GarbageNumber", "gpus:\n  - index: 0\n    memory_used_mb: lots\n",
                     "gpus[0].memory_used_mb", "expected a number, got 'lots' (line 3)"},
        BadInventory{"UsedOverTotal", "gpus:\n  - memory_total_mb: 100\n    memory_used_mb: 200\n",
                     "gpus[0].memory_used_mb", "exceeds memory_total_mb"},
        BadInventory{"UtilizationOutOfRange", "gpus:\n  - utilization_percent: 120\n",
                     "gpus[0].utilization_percent", "[0, 100]"},
        BadInventory{"UnknownKey", "gpus:\n  - {index: 0, memroy_used_mb: 5}\n",
                     "gpus[0].memroy_used_mb", "unknown field"},
        BadInventory{"DuplicateIndex", "gpus:\n  - index: 0\n  - index: 0\n", "gpus[1].index",
                     "duplicate GPU index 0"},
        BadInventory{"MissingGpus", "topology: []\n", "gpus", "required field"},
        BadInventory{"BadProcess", "gpus:\n  - processes: [{used_memory_mb: 5}]\n",
                     "gpus[0].processes[0].pid", "required field"},
        BadInventory{"TopologyWrongSize", "gpus: [{index: 0}, {index: 1}]\ntopology: [[same]]\n",
                     "topology", "2x2"},
        BadInventory{"TopologyUnknownLink", "gpus: [{index: 0}]\ntopology: [[warp]]\n",
                     "topology[0][0]", "unknown link 'warp'"},
        BadInventory{"NegativePrice", "gpus:\n  - price_per_hour: -1\n", "gpus[0].price_per_hour",
                     "[0, 1000000]"},
        BadInventory{"PriceNotANumber", "gpus: [{}]\nprices:\n  H100-80GB: cheap\n",
                     "prices.H100-80GB", "expected a number, got 'cheap' (line 3)"},
        BadInventory{"PricesNotAMap", "gpus: [{}]\nprices: [1, 2]\n", "prices", "map of GPU type"},
        BadInventory{"SpotNotBool", "gpus:\n  - spot: maybe\n", "gpus[0].spot", "line 2"},
        BadInventory{"NoTypeFromName", "gpus:\n  - name: NVIDIA\n", "gpus[0].type",
                     "cannot tell the type from name 'NVIDIA'"},
        BadInventory{"SyntaxError", "gpus: [\n", "inv.yaml", "cannot parse"}),
    [](const ::testing::TestParamInfo<BadInventory>& info) { return info.param.name; });

TEST(InventoryTest, RejectsNonMappingRoot) {
  EXPECT_FALSE(ParseInventory("- 1\n- 2\n", "inv.yaml"));
  EXPECT_FALSE(ParseInventory("", "inv.yaml"));
}

TEST(InventoryTest, DefaultIsFourIdleH100s) {
  const Inventory inventory = DefaultInventory();
  ASSERT_EQ(inventory.gpus.size(), 4u);
  for (const GpuInfo& gpu : inventory.gpus) {
    EXPECT_EQ(gpu.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(gpu.type, "H100-80GB");
    EXPECT_FALSE(gpu.price_per_hour);
    EXPECT_EQ(gpu.memory_total_mb, 81559);
    EXPECT_EQ(gpu.memory_used_mb, 0);
    EXPECT_EQ(gpu.utilization_percent, 0.0);
    ASSERT_TRUE(gpu.temperature_c && gpu.power_draw_w);
    EXPECT_GT(*gpu.power_draw_w, 50.0);
  }
  EXPECT_EQ(inventory.topology.levels[0][3], LinkLevel::kNvLink);
}

TEST(InventoryTest, ExampleInventoryParses) {
  Result<Inventory> inventory = ParseInventory(
      [] {
        std::ifstream in(GPUSCALE_SOURCE_DIR "/examples/inventory.yaml");
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
      }(),
      "examples/inventory.yaml");
  ASSERT_TRUE(inventory) << inventory.error().ToString();
  ASSERT_EQ(inventory->gpus.size(), 4u);
  EXPECT_EQ(inventory->gpus[0].processes.size(), 1u);
  EXPECT_FALSE(inventory->gpus[3].power_draw_w);
  EXPECT_TRUE(inventory->topology.Known());
}

TEST(InventoryTest, TypesFromNamesOrGivenAndPricesPerGpuOrByType) {
  const char* text = R"(
prices: {H100-80GB: 2.49, A100-80GB: 1.29}
gpus:
  - {index: 0}
  - {index: 1, name: NVIDIA A100-SXM4-80GB}
  - {index: 2, name: NVIDIA A100-SXM4-80GB, price_per_hour: 0.52, spot: true}
  - {index: 3, name: NVIDIA L40S}
  - {index: 4, name: Some Card, type: X1}
)";
  Result<Inventory> inventory = ParseInventory(text, "inv.yaml");
  ASSERT_TRUE(inventory) << inventory.error().ToString();
  ASSERT_EQ(inventory->gpus.size(), 5u);
  const auto& g = inventory->gpus;
  EXPECT_EQ(g[0].type, "H100-80GB");
  EXPECT_EQ(g[0].price_per_hour, 2.49);
  EXPECT_FALSE(g[0].spot);
  EXPECT_EQ(g[1].type, "A100-80GB");
  EXPECT_EQ(g[1].price_per_hour, 1.29);
  EXPECT_EQ(g[2].price_per_hour, 0.52);
  EXPECT_TRUE(g[2].spot);
  EXPECT_EQ(g[3].type, "L40S");
  EXPECT_FALSE(g[3].price_per_hour) << "a type with no price is unknown, never 0";
  EXPECT_EQ(g[4].type, "X1");
}

TEST(InventoryTest, MixedExampleHasTwoTypesAtTwoPrices) {
  std::ifstream in(GPUSCALE_SOURCE_DIR "/examples/inventory-mixed.yaml");
  std::stringstream text;
  text << in.rdbuf();
  Result<Inventory> inventory = ParseInventory(text.str(), "examples/inventory-mixed.yaml");
  ASSERT_TRUE(inventory) << inventory.error().ToString();
  ASSERT_EQ(inventory->gpus.size(), 8u);
  int h100 = 0, a100 = 0;
  for (const GpuInfo& gpu : inventory->gpus) {
    ASSERT_TRUE(gpu.price_per_hour) << gpu.index;
    h100 += gpu.type == "H100-80GB";
    a100 += gpu.type == "A100-80GB";
  }
  EXPECT_EQ(h100, 4);
  EXPECT_EQ(a100, 4);
  EXPECT_TRUE(inventory->gpus[7].spot);
}

TEST(InventoryTest, LinkLevelNamesRoundTrip) {
  for (LinkLevel level :
       {LinkLevel::kSame, LinkLevel::kNvLink, LinkLevel::kSingleSwitch, LinkLevel::kMultipleSwitch,
        LinkLevel::kHostBridge, LinkLevel::kNumaNode, LinkLevel::kSystem, LinkLevel::kUnknown}) {
    EXPECT_EQ(ParseLinkLevel(LinkLevelName(level)), level);
  }
  EXPECT_FALSE(ParseLinkLevel("fast"));
}

}  // namespace
}  // namespace gpuscale::gpu
