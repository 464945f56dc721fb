#include "gpumon/backend_factory.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscale::gpu {
namespace {

constexpr char kFakeNvidiaSmi[] = GPUSCALE_SOURCE_DIR "/tests/fixtures/fake_nvidia_smi.sh";

BackendOptions Options(std::string kind, std::string nvidia_smi = "nvidia-smi",
                       std::string nvml = "") {
  BackendOptions options;
  options.kind = std::move(kind);
  options.nvidia_smi_path = std::move(nvidia_smi);
  options.nvml_library_path = std::move(nvml);
  return options;
}

TEST(BackendFactoryTest, SimulatedWithoutInventoryIsTheDefault) {
  auto backend = MakeBackend(Options("simulated"));
  ASSERT_TRUE(backend) << backend.error().ToString();
  EXPECT_EQ((*backend)->Name(), "simulated");
  EXPECT_EQ((*backend)->Query(Seconds{0})->gpus.size(), 4u);
}

TEST(BackendFactoryTest, NvidiaSmiGpusGetTypeFromNameAndPriceFromConfig) {
  BackendOptions options = Options("nvidia-smi", kFakeNvidiaSmi);
  auto unpriced = MakeBackend(options);
  ASSERT_TRUE(unpriced) << unpriced.error().ToString();
  Result<GpuSnapshot> plain = (*unpriced)->Query(Seconds{0});
  ASSERT_TRUE(plain) << plain.error().ToString();
  ASSERT_FALSE(plain->gpus.empty());
  const std::string type = plain->gpus[0].type;
  EXPECT_EQ(type, GpuTypeKey(plain->gpus[0].name));
  EXPECT_FALSE(type.empty()) << plain->gpus[0].name;
  EXPECT_FALSE(plain->gpus[0].price_per_hour) << "no price configured: unknown";

  options.prices = {{type, 3.25}};
  auto priced = MakeBackend(options);
  ASSERT_TRUE(priced) << priced.error().ToString();
  Result<GpuSnapshot> snapshot = (*priced)->Query(Seconds{0});
  ASSERT_TRUE(snapshot) << snapshot.error().ToString();
  EXPECT_EQ(snapshot->gpus[0].price_per_hour, 3.25);
}

TEST(BackendFactoryTest, UnknownKindNamesTheFlag) {
  auto backend = MakeBackend(Options("cuda"));
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(backend.error().field, "--backend");
}

TEST(BackendFactoryTest, AutoPrefersNvml) {
  auto backend = MakeBackend(Options("auto", kFakeNvidiaSmi, GPUSCALE_FAKE_NVML_PATH));
  ASSERT_TRUE(backend) << backend.error().ToString();
  EXPECT_EQ((*backend)->Name(), "nvml");
}

TEST(BackendFactoryTest, AutoFallsBackToNvidiaSmi) {
  auto backend = MakeBackend(Options("auto", kFakeNvidiaSmi, "/nonexistent/libnvidia-ml.so.1"));
  ASSERT_TRUE(backend) << backend.error().ToString();
  EXPECT_EQ((*backend)->Name(), "nvidia-smi");
}

TEST(BackendFactoryTest, AutoWithoutAnyGpuSaysWhatToDo) {
  auto backend =
      MakeBackend(Options("auto", "/nonexistent/nvidia-smi", "/nonexistent/libnvidia-ml.so.1"));
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  const std::string& message = backend.error().message;
  EXPECT_NE(message.find("no GPU found"), std::string::npos);
  EXPECT_NE(message.find("--backend simulated"), std::string::npos);
  EXPECT_NE(message.find("install the NVIDIA driver"), std::string::npos) << message;
}

TEST(BackendFactoryTest, NamedNvmlFailsClearlyWhenAbsent) {
  auto backend = MakeBackend(Options("nvml", "nvidia-smi", "/nonexistent/libnvml.so"));
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace gpuscale::gpu
