#include "orch/variant_orchestrator.h"

#include <gtest/gtest.h>

namespace gpuscale::orch {
namespace {

// H100 at 2.49 an hour with 2x the capacity (1.245 per capacity) is cheaper per capacity
// than A100 at 1.29 (1.29 per capacity), itself cheaper than an A100 x2 shape (1.43), which
// needs two free A100s.
const std::vector<VariantPlacement> kVariants = {
    {"h100", "H100-80GB", 1, 2.0, 2.49, false},
    {"a100", "A100-80GB", 1, 1.0, 1.29, false},
    {"a100x2", "A100-80GB", 2, 1.8, 2.58, false},
};

TEST(ChooseVariantTest, CheapestPerCapacityWithFreeGpusFirst) {
  EXPECT_EQ(ChooseVariant(kVariants, {0, 0, 0}, {{"H100-80GB", 2}, {"A100-80GB", 2}}), 0);
}

TEST(ChooseVariantTest, ATypeWithNoFreeGpuIsSkipped) {
  EXPECT_EQ(ChooseVariant(kVariants, {2, 0, 0}, {{"H100-80GB", 0}, {"A100-80GB", 2}}), 1);
  EXPECT_EQ(ChooseVariant(kVariants, {2, 0, 0}, {{"A100-80GB", 2}}), 1);  // absent: none free
}

TEST(ChooseVariantTest, AShapeNeedsAllItsGpusFree) {
  const std::vector<VariantPlacement> two = {kVariants[0], kVariants[2]};
  EXPECT_EQ(ChooseVariant(two, {2, 0}, {{"A100-80GB", 2}}), 1);
  EXPECT_EQ(ChooseVariant(two, {2, 0}, {{"A100-80GB", 1}}), -1);
}

TEST(ChooseVariantTest, NoneWhenNoTypeHasAFreeGpu) {
  EXPECT_EQ(ChooseVariant(kVariants, {2, 2, 0}, {}), -1);
}

}  // namespace
}  // namespace gpuscale::orch
