#include "experiments/emulated_gpu_load.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscale::experiments {
namespace {

metrics::Exposition Parse(const std::string& text) {
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(text);
  EXPECT_TRUE(parsed.has_value()) << parsed.error().ToString();
  return parsed.value_or(metrics::Exposition{});
}

constexpr char kEmulated[] =
    "# TYPE gpuscale_emulator_gpu_utilization_ratio gauge\n"
    "gpuscale_emulator_gpu_utilization_ratio{engine=\"0\",model_name=\"m\"} 0.25\n"
    "# TYPE gpuscale_emulator_gpu_memory_used_bytes gauge\n"
    "gpuscale_emulator_gpu_memory_used_bytes{engine=\"0\",model_name=\"m\"} 2147483648\n";

const gpu::GpuProcess kReplica{4242, std::nullopt, "chat replica 1"};

TEST(EmulatedGpuLoadTest, PutsTheReplicasLoadOnEachOfItsGpus) {
  gpu::GpuLoads loads;
  AddEmulatedGpuLoad(Parse(kEmulated), {1, 3}, kReplica, loads);
  ASSERT_EQ(loads.size(), 2u);
  const gpu::GpuProcess on_gpu{4242, 2048, "chat replica 1"};
  EXPECT_EQ(loads[1], (gpu::GpuLoad{25, 2048, {on_gpu}}));
  EXPECT_EQ(loads[3], (gpu::GpuLoad{25, 2048, {on_gpu}}));
  // A second replica on GPU 3 (fractional sharing) adds to it and to its process list.
  AddEmulatedGpuLoad(Parse(kEmulated), {3}, {77, std::nullopt, "chat replica 2"}, loads);
  EXPECT_EQ(loads[3], (gpu::GpuLoad{50, 4096, {on_gpu, {77, 2048, "chat replica 2"}}}));
}

TEST(EmulatedGpuLoadTest, RealEnginesAndBadValuesAddNothing) {
  gpu::GpuLoads loads;
  AddEmulatedGpuLoad(Parse("vllm:num_requests_running{model_name=\"m\"} 3\n"), {0}, kReplica,
                     loads);
  EXPECT_TRUE(loads.empty()) << "a real engine's GPUs report their own processes";
  AddEmulatedGpuLoad(Parse("gpuscale_emulator_gpu_utilization_ratio -2\n"
                           "gpuscale_emulator_gpu_memory_used_bytes NaN\n"),
                     {0}, kReplica, loads);
  EXPECT_EQ(loads[0], (gpu::GpuLoad{0, 0, {{4242, 0, "chat replica 1"}}}));
  AddEmulatedGpuLoad(Parse("gpuscale_emulator_gpu_utilization_ratio 7\n"), {1}, kReplica, loads);
  EXPECT_EQ(loads[1].utilization_percent, 100) << "occupancy is at most 1";
}

}  // namespace
}  // namespace gpuscale::experiments
