#include "scale/variant_allocator.h"

#include <gtest/gtest.h>

namespace gpuscale::scale {
namespace {

// Llama-2-70B-like shapes: an H100 x2 replica serves 10 units for 8/h (0.8 per unit), an A100
// x4 replica 8 units for 11.2/h (1.4 per unit), its spot twin the same for 4.48/h (0.56).
VariantOffer H100(int replicas = 0) { return {"h100", 2, 10, 8.0, false, replicas}; }
VariantOffer A100(int replicas = 0) { return {"a100", 4, 8, 11.2, false, replicas}; }
VariantOffer A100Spot(int replicas = 0) { return {"a100", 4, 8, 4.48, true, replicas}; }

AllocationLimits Free(int h100, int a100) { return {{{"h100", h100}, {"a100", a100}}, {}, 0, 0}; }

struct AllocCase {
  const char* name;
  double needed;
  std::vector<VariantOffer> offers;
  AllocationLimits limits;
  std::vector<int> want;
  bool short_of_capacity = false;
};

TEST(VariantAllocatorTest, SizesTheCheapestMixTableDriven) {
  AllocationLimits h100_limit = Free(16, 16);
  h100_limit.max_gpus = {{"h100", 4}};
  AllocationLimits budget = Free(16, 16);
  budget.budget_per_hour = 20;
  AllocationLimits base = Free(16, 16);
  base.on_demand_base_ratio = 0.5;
  const AllocCase cases[] = {
      {"grows the cheapest per capacity first", 25, {A100(), H100()}, Free(16, 16), {0, 3}},
      {"skips a type with no free GPU", 25, {A100(), H100()}, Free(0, 16), {4, 0}},
      {"a type's limit sends the rest to the next cheapest",
       35,
       {A100(), H100()},
       h100_limit,
       {2, 2}},
      {"the budget stops growth short", 35, {A100(), H100()}, budget, {0, 2}, true},
      {"shrinks the most expensive first", 10, {A100(2), H100(2)}, Free(16, 16), {0, 1}},
      {"keeps a replica the need still needs", 17, {A100(1), H100(1)}, Free(16, 16), {1, 1}},
      {"over the budget: drops the most expensive", 0.5, {A100(1), H100(2)}, budget, {0, 1}},
      {"over a type's limit: drops replicas of that type",
       30,
       {A100(0), H100(3)},
       h100_limit,
       {2, 2}},
      {"spot is cheapest", 16, {A100Spot(), H100(), A100()}, Free(16, 16), {2, 0, 0}},
      {"the on-demand base comes first", 40, {A100Spot(), H100()}, base, {3, 2}},
      {"no GPU free at all: short", 10, {A100(), H100()}, Free(0, 0), {0, 0}, true},
  };
  for (const AllocCase& c : cases) {
    const Allocation got = AllocateByCost(c.needed, c.offers, c.limits);
    EXPECT_EQ(got.replicas, c.want) << c.name;
    EXPECT_EQ(got.short_of_capacity, c.short_of_capacity) << c.name;
    double capacity = 0, price = 0;
    for (size_t i = 0; i < c.want.size(); ++i) {
      capacity += c.want[i] * c.offers[i].capacity;
      price += c.want[i] * c.offers[i].price_per_hour;
    }
    EXPECT_DOUBLE_EQ(got.capacity, capacity) << c.name;
    EXPECT_DOUBLE_EQ(got.price_per_hour, price) << c.name;
  }
}

TEST(VariantAllocatorTest, FreeGpusCountWhatThisAllocationAlreadyTook) {
  // 4 H100s free: two more 2-GPU replicas fit, a third does not.
  const Allocation got = AllocateByCost(45, {H100(1), A100()}, Free(4, 8));
  EXPECT_EQ(got.replicas, (std::vector<int>{3, 2}));
}

TEST(VariantAllocatorTest, StepFunctionsPickTheEnds) {
  const std::vector<VariantOffer> offers = {A100(), H100(), A100Spot()};
  EXPECT_EQ(CheapestFittingOffer(offers, {0, 0, 0}, Free(16, 16), 10), 2);
  EXPECT_EQ(CheapestFittingOffer(offers, {0, 0, 0}, Free(16, 0), 10), 1);
  EXPECT_EQ(CheapestFittingOffer(offers, {0, 0, 0}, Free(0, 0), 10), -1);
  EXPECT_EQ(MostExpensiveOffer(offers, {1, 1, 1}), 0);
  EXPECT_EQ(MostExpensiveOffer(offers, {0, 1, 1}), 1);
  EXPECT_EQ(MostExpensiveOffer(offers, {0, 0, 0}), -1);
}

}  // namespace
}  // namespace gpuscale::scale
