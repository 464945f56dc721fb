#include "gpumon/nvidia_smi_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "testing/scoped_env.h"

namespace gpuscale::gpu {
namespace {

using testing::ScopedEnv;

constexpr char kFakeSmiScript[] = GPUSCALE_SOURCE_DIR "/tests/fixtures/fake_nvidia_smi.sh";

class ScopedFile {
 public:
  explicit ScopedFile(const std::string& text) {
    char pattern[] = "/tmp/gpuscale_smi_XXXXXX";
    const int fd = mkstemp(pattern);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = pattern;
    std::ofstream(path_) << text;
  }
  ~ScopedFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(NvidiaSmiBackendTest, ReadsGpusAndProcessesFromTheTool) {
  NvidiaSmiBackend backend(kFakeSmiScript);
  Result<GpuSnapshot> snapshot = backend.Query(Seconds{3});
  ASSERT_TRUE(snapshot) << snapshot.error().ToString();
  EXPECT_EQ(snapshot->backend, "nvidia-smi");
  EXPECT_EQ(snapshot->taken_at, Seconds{3});
  ASSERT_EQ(snapshot->gpus.size(), 2u);
  EXPECT_EQ(snapshot->gpus[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(snapshot->gpus[0].memory_used_mb, 10240);
  EXPECT_FALSE(snapshot->gpus[1].power_draw_w);
  ASSERT_EQ(snapshot->gpus[0].processes.size(), 1u);
  EXPECT_EQ(snapshot->gpus[0].processes[0].pid, 4242);
  EXPECT_EQ(snapshot->gpus[0].processes[0].name, "python3");
}

TEST(NvidiaSmiBackendTest, NonZeroExitIsUnavailableWithTheToolsMessage) {
  ScopedFile output("NVIDIA-SMI has failed because it couldn't communicate with the driver\n");
  ScopedEnv env1("FAKE_NVIDIA_SMI_OUTPUT", output.path());
  ScopedEnv env2("FAKE_NVIDIA_SMI_EXIT", "9");
  NvidiaSmiBackend backend(kFakeSmiScript);
  Result<GpuSnapshot> snapshot = backend.Query(Seconds{0});
  ASSERT_FALSE(snapshot);
  EXPECT_EQ(snapshot.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(snapshot.error().message.find("status 9"), std::string::npos);
  EXPECT_NE(snapshot.error().message.find("couldn't communicate"), std::string::npos);
}

TEST(NvidiaSmiBackendTest, MalformedOutputNamesTheLine) {
  ScopedFile output("0, GPU-a, X, 100, 10, 90, 5, 40, 50\n1, GPU-b, X, 100, ten, 90, 5, 40, 50\n");
  ScopedEnv env("FAKE_NVIDIA_SMI_OUTPUT", output.path());
  NvidiaSmiBackend backend(kFakeSmiScript);
  Result<GpuSnapshot> snapshot = backend.Query(Seconds{0});
  ASSERT_FALSE(snapshot);
  EXPECT_EQ(snapshot.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot.error().field, "line 2");
  EXPECT_NE(snapshot.error().message.find("memory.used"), std::string::npos);
}

TEST(NvidiaSmiBackendTest, HungToolIsKilledAfterTimeout) {
  ScopedEnv env("FAKE_NVIDIA_SMI_SLEEP", "30");
  NvidiaSmiBackend backend(kFakeSmiScript, Seconds{0.05});
  Result<GpuSnapshot> snapshot = backend.Query(Seconds{0});
  ASSERT_FALSE(snapshot);
  EXPECT_EQ(snapshot.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(snapshot.error().message.find("did not finish"), std::string::npos);
}

TEST(NvidiaSmiBackendTest, MissingToolIsUnavailable) {
  NvidiaSmiBackend backend("/nonexistent/nvidia-smi");
  Result<GpuSnapshot> snapshot = backend.Query(Seconds{0});
  ASSERT_FALSE(snapshot);
  EXPECT_EQ(snapshot.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace gpuscale::gpu
