#include "gpu/availability_score.h"

#include <gtest/gtest.h>

namespace gpuscale::gpu {
namespace {

GpuInfo Gpu(std::optional<int64_t> total, std::optional<int64_t> free,
            std::optional<double> utilization) {
  GpuInfo gpu;
  gpu.memory_total_mb = total;
  gpu.memory_free_mb = free;
  gpu.utilization_percent = utilization;
  return gpu;
}

struct ScoreCase {
  const char* name;
  GpuInfo gpu;
  ScoreWeights weights;
  double expected;
};

class AvailabilityScoreTest : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(AvailabilityScoreTest, MatchesWeightedFormula) {
  const ScoreCase& c = GetParam();
  EXPECT_NEAR(AvailabilityScore(c.gpu, c.weights), c.expected, 1e-9) << c.name;
}

// The LLM Autotuner's GPU tracking: score = 0.6 * free/total + 0.4 * (100 - util)/100.
INSTANTIATE_TEST_SUITE_P(
    Cases, AvailabilityScoreTest,
    ::testing::Values(
        ScoreCase{"IdleEmptyGpu", Gpu(80000, 80000, 0), {}, 1.0},
        ScoreCase{"FullBusyGpu", Gpu(80000, 0, 100), {}, 0.0},
        ScoreCase{"HalfFreeQuarterBusy", Gpu(80000, 40000, 25), {}, 0.6 * 0.5 + 0.4 * 0.75},
        ScoreCase{"UnknownUtilizationCountsBusy", Gpu(80000, 80000, std::nullopt), {}, 0.6},
        ScoreCase{"UnknownMemoryCountsFull", Gpu(std::nullopt, std::nullopt, 0), {}, 0.4},
        ScoreCase{"MemoryOnlyWeights", Gpu(100, 25, 0), {1.0, 0.0}, 0.25},
        ScoreCase{"WeightsNormalised", Gpu(100, 50, 50), {3.0, 1.0}, 0.5},
        ScoreCase{"ZeroWeights", Gpu(100, 50, 50), {0.0, 0.0}, 0.0}),
    [](const ::testing::TestParamInfo<ScoreCase>& info) { return info.param.name; });

TEST(FreeMemoryShareTest, DerivesFreeFromUsedWhenFreeIsAbsent) {
  GpuInfo gpu = Gpu(1000, std::nullopt, 0);
  gpu.memory_used_mb = 250;
  EXPECT_DOUBLE_EQ(FreeMemoryShare(gpu), 0.75);
}

}  // namespace
}  // namespace gpuscale::gpu
