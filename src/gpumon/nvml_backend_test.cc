#include "gpumon/nvml_backend.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "testing/scoped_env.h"

namespace gpuscale::gpu {
namespace {

using testing::ScopedEnv;

TEST(NvmlBackendTest, MissingLibraryIsUnavailableWithAdvice) {
  auto backend = NvmlBackend::Create("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(backend.error().message.find("install the NVIDIA driver"), std::string::npos);
  EXPECT_NE(backend.error().message.find("--backend simulated"), std::string::npos);
}

TEST(NvmlBackendTest, LibraryWithoutNvmlSymbolsIsUnavailable) {
  auto backend = NvmlBackend::Create("libm.so.6");  // loads, but is not NVML
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(backend.error().message.find("lacks nvmlInit_v2"), std::string::npos);
}

TEST(NvmlBackendTest, InitFailureCarriesNvmlErrorString) {
  ScopedEnv env("FAKE_NVML_INIT_ERROR", "9");
  auto backend = NvmlBackend::Create(GPUSCALE_FAKE_NVML_PATH);
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(backend.error().message.find("Driver Not Loaded"), std::string::npos);
}

TEST(NvmlBackendTest, ReadsDevicesFromFakeNvml) {
  auto backend = NvmlBackend::Create(GPUSCALE_FAKE_NVML_PATH);
  ASSERT_TRUE(backend) << backend.error().ToString();
  Result<GpuSnapshot> snapshot = (*backend)->Query(Seconds{7});
  ASSERT_TRUE(snapshot) << snapshot.error().ToString();
  EXPECT_EQ(snapshot->backend, "nvml");
  ASSERT_EQ(snapshot->gpus.size(), 3u);
  const GpuInfo& gpu2 = snapshot->gpus[2];
  EXPECT_EQ(gpu2.index, 2);
  EXPECT_EQ(gpu2.uuid, "GPU-fakenvml-0002");
  EXPECT_EQ(gpu2.name, "Fake H100 80GB");
  EXPECT_EQ(gpu2.memory_total_mb, 81559);
  EXPECT_EQ(gpu2.memory_used_mb, 2000);
  EXPECT_EQ(gpu2.memory_free_mb, 79559);
  EXPECT_EQ(gpu2.utilization_percent, 20.0);
  EXPECT_EQ(gpu2.temperature_c, 32.0);
  EXPECT_DOUBLE_EQ(*gpu2.power_draw_w, 71.0);    // 71000 mW
  EXPECT_FALSE(snapshot->gpus[1].power_draw_w);  // NOT_SUPPORTED -> absent, not 0
  ASSERT_EQ(snapshot->gpus[0].processes.size(), 1u);
  EXPECT_EQ(snapshot->gpus[0].processes[0].pid, 1000);
  EXPECT_EQ(snapshot->gpus[0].processes[0].used_memory_mb, 2048);
}

TEST(NvmlBackendTest, TopologyFromCommonAncestorAndNvLink) {
  auto backend = NvmlBackend::Create(GPUSCALE_FAKE_NVML_PATH);
  ASSERT_TRUE(backend);
  Result<GpuSnapshot> snapshot = (*backend)->Query(Seconds{0});
  ASSERT_TRUE(snapshot);
  const GpuTopology& topology = snapshot->topology;
  ASSERT_TRUE(topology.Known());
  EXPECT_EQ(topology.levels[0][0], LinkLevel::kSame);
  EXPECT_EQ(topology.levels[0][1], LinkLevel::kNvLink);  // SINGLE upgraded by the NVLink
  EXPECT_EQ(topology.levels[1][0], LinkLevel::kNvLink);
  EXPECT_EQ(topology.levels[0][2], LinkLevel::kSystem);
  EXPECT_EQ(topology.levels[2][1], LinkLevel::kSystem);
}

TEST(NvmlBackendTest, ZeroDevicesIsAnEmptySnapshot) {
  ScopedEnv env("FAKE_NVML_DEVICE_COUNT", "0");
  auto backend = NvmlBackend::Create(GPUSCALE_FAKE_NVML_PATH);
  ASSERT_TRUE(backend);
  Result<GpuSnapshot> snapshot = (*backend)->Query(Seconds{0});
  ASSERT_TRUE(snapshot);
  EXPECT_TRUE(snapshot->gpus.empty());
  EXPECT_FALSE(snapshot->topology.Known());
}

}  // namespace
}  // namespace gpuscale::gpu
