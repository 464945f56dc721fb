#include "gpu/gpu_type.h"

#include <gtest/gtest.h>

namespace gpuscale::gpu {
namespace {

struct Case {
  const char* name;
  const char* key;
};

TEST(GpuTypeKeyTest, NormalizesProductNamesDriversReport) {
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", "H100-80GB"},
      {"NVIDIA H100-SXM5-80GB", "H100-80GB"},
      {"NVIDIA H100 PCIe", "H100"},
      {"NVIDIA H100 NVL", "H100-NVL"},
      {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
      {"NVIDIA A100-SXM4-40GB", "A100-40GB"},
      {"NVIDIA A100 80GB PCIe", "A100-80GB"},
      {"NVIDIA H200", "H200"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA A10G", "A10G"},
      {"Tesla V100-SXM2-16GB", "V100-16GB"},
      {"NVIDIA GeForce RTX 4090", "RTX-4090"},
      {"  NVIDIA   L4 ", "L4"},
  };
  for (const Case& c : cases) EXPECT_EQ(GpuTypeKey(c.name), c.key) << c.name;
}

TEST(GpuTypeKeyTest, NameWithNoModelWordHasNoType) {
  EXPECT_EQ(GpuTypeKey(""), "");
  EXPECT_EQ(GpuTypeKey("NVIDIA"), "");
  EXPECT_EQ(GpuTypeKey("NVIDIA 80GB"), "");
}

TEST(LabelTypesAndPricesTest, FillsTypeFromNameAndPriceByTypeKeepingWhatIsSet) {
  GpuSnapshot snapshot;
  snapshot.gpus.resize(4);
  snapshot.gpus[0].name = "NVIDIA H100 80GB HBM3";
  snapshot.gpus[1].name = "NVIDIA A100-SXM4-80GB";
  snapshot.gpus[2].name = "NVIDIA H100 80GB HBM3";
  snapshot.gpus[2].price_per_hour = 1.5;  // the inventory's own price wins
  snapshot.gpus[3].name = "NVIDIA L4";
  snapshot.gpus[3].type = "custom";  // an explicit type is kept
  LabelTypesAndPrices(snapshot, PriceTable{{"H100-80GB", 2.49}, {"L4", 0.7}});
  EXPECT_EQ(snapshot.gpus[0].type, "H100-80GB");
  EXPECT_EQ(snapshot.gpus[0].price_per_hour, 2.49);
  EXPECT_EQ(snapshot.gpus[1].type, "A100-80GB");
  EXPECT_FALSE(snapshot.gpus[1].price_per_hour.has_value()) << "unlisted type: unknown, not 0";
  EXPECT_EQ(snapshot.gpus[2].price_per_hour, 1.5);
  EXPECT_EQ(snapshot.gpus[3].type, "custom");
  EXPECT_FALSE(snapshot.gpus[3].price_per_hour.has_value());
}

}  // namespace
}  // namespace gpuscale::gpu
