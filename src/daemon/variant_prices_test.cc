#include "daemon/variant_prices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

gpu::GpuInfo Gpu(int index, std::string type, std::optional<double> price, bool spot = false) {
  gpu::GpuInfo g;
  g.index = index;
  g.type = std::move(type);
  g.price_per_hour = price;
  g.spot = spot;
  return g;
}

ServiceConfig Mixed() {
  ServiceConfig s;
  s.name = "chat";
  s.variants = {{"h100", "H100-80GB", 2, 2.0, false, Seconds{120}},
                {"a100", "A100-80GB", 1, 1.0, true, Seconds{30}}};
  return s;
}

TEST(PriceVariantsTest, PricesEachVariantFromItsTypesGpus) {
  gpu::GpuSnapshot gpus;
  gpus.gpus = {Gpu(0, "H100-80GB", 2.49), Gpu(1, "A100-80GB", 1.29),
               Gpu(2, "A100-80GB", 0.52, /*spot=*/true)};
  auto placed = PriceVariants(Mixed(), gpus, "services[0].");
  ASSERT_TRUE(placed) << placed.error().ToString();
  ASSERT_EQ(placed->size(), 2u);
  EXPECT_DOUBLE_EQ((*placed)[0].price_per_hour, 2 * 2.49);  // per replica: 2 GPUs
  EXPECT_DOUBLE_EQ((*placed)[1].price_per_hour, 0.52);      // spot: the type's spot GPUs
  EXPECT_EQ((*placed)[1].gpu_type, "A100-80GB");
  EXPECT_DOUBLE_EQ((*placed)[0].capacity, 2.0);
}

TEST(PriceVariantsTest, ATypeTheInventoryLacksOrDoesNotPriceNamesTheField) {
  gpu::GpuSnapshot gpus;
  gpus.gpus = {Gpu(0, "H100-80GB", 2.49)};
  auto missing = PriceVariants(Mixed(), gpus, "services[0].");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().field, "services[0].variants[1].gpu_type");
  EXPECT_THAT(missing.error().message, HasSubstr("no GPU of type 'A100-80GB'"));
  gpus.gpus.push_back(Gpu(1, "A100-80GB", std::nullopt));
  auto unpriced = PriceVariants(Mixed(), gpus, "services[0].");
  ASSERT_FALSE(unpriced);
  EXPECT_EQ(unpriced.error().field, "services[0].variants[1].gpu_type");
  EXPECT_THAT(unpriced.error().message, HasSubstr("no price for GPU type 'A100-80GB'"));
}

}  // namespace
}  // namespace gpuscale::daemon
