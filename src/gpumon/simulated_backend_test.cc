#include "gpumon/simulated_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gpumon/monitor.h"

namespace gpuscale::gpu {
namespace {

// A temporary inventory file, removed by the destructor.
class TempFile {
 public:
  TempFile() {
    char pattern[] = "/tmp/gpuscale_inventory_XXXXXX";
    const int fd = mkstemp(pattern);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = pattern;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  void Write(const std::string& text) const { std::ofstream(path_, std::ios::trunc) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string OneGpu(int used_mb) {
  return "gpus:\n  - index: 0\n    memory_total_mb: 1000\n    memory_used_mb: " +
         std::to_string(used_mb) + "\n";
}

TEST(SimulatedBackendTest, DefaultInventoryHasFourH100s) {
  SimulatedBackend backend;
  Result<GpuSnapshot> snapshot = backend.Query(Seconds{12});
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->backend, "simulated");
  EXPECT_EQ(snapshot->taken_at, Seconds{12});
  EXPECT_EQ(snapshot->gpus.size(), 4u);
  EXPECT_TRUE(snapshot->topology.Known());
}

TEST(SimulatedBackendTest, RereadsFileWhenItChanges) {
  TempFile file;
  file.Write(OneGpu(100));
  auto backend = SimulatedBackend::FromFile(file.path());
  ASSERT_TRUE(backend) << backend.error().ToString();
  EXPECT_EQ((*backend)->Query(Seconds{0})->gpus[0].memory_used_mb, 100);
  EXPECT_EQ((*backend)->Query(Seconds{1})->gpus[0].memory_used_mb, 100);
  EXPECT_EQ((*backend)->reload_count(), 1);  // unchanged content is not re-parsed

  // Same size, written immediately: only a content comparison notices.
  file.Write(OneGpu(900));
  EXPECT_EQ((*backend)->Query(Seconds{2})->gpus[0].memory_used_mb, 900);
  EXPECT_EQ((*backend)->reload_count(), 2);
}

// The path tests rely on: a monitor sees GPU state change when the file is edited.
TEST(SimulatedBackendTest, MonitorSeesInventoryEdits) {
  TempFile file;
  file.Write(OneGpu(100));
  auto backend = SimulatedBackend::FromFile(file.path());
  ASSERT_TRUE(backend);
  ManualClock clock;
  Monitor monitor(**backend, clock);
  ASSERT_TRUE(monitor.SampleOnce());
  file.Write(OneGpu(700));
  clock.Advance(Seconds{1});
  ASSERT_TRUE(monitor.SampleOnce());
  const GpuStats stats = monitor.Stats().at(0);
  EXPECT_EQ(stats.memory_used_mb.min, 100);
  EXPECT_EQ(stats.memory_used_mb.max, 700);
  EXPECT_EQ(stats.memory_used_mb.samples, 2);
}

TEST(SimulatedBackendTest, BadRewriteFailsThenRecovers) {
  TempFile file;
  file.Write(OneGpu(100));
  auto backend = SimulatedBackend::FromFile(file.path());
  ASSERT_TRUE(backend);
  file.Write("gpus:\n  - memory_used_mb: oops\n");
  Result<GpuSnapshot> bad = (*backend)->Query(Seconds{1});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "gpus[0].memory_used_mb");
  file.Write(OneGpu(300));
  Result<GpuSnapshot> good = (*backend)->Query(Seconds{2});
  ASSERT_TRUE(good);
  EXPECT_EQ(good->gpus[0].memory_used_mb, 300);
}

TEST(SimulatedBackendTest, MissingFileIsNotFoundNamingTheFlag) {
  auto backend = SimulatedBackend::FromFile("/nonexistent/inventory.yaml");
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(backend.error().field, "--inventory");
  EXPECT_NE(backend.error().message.find("/nonexistent/inventory.yaml"), std::string::npos);
}

TEST(SimulatedBackendTest, InvalidFileFailsAtStartup) {
  TempFile file;
  file.Write("gpus: 5\n");
  auto backend = SimulatedBackend::FromFile(file.path());
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(backend.error().field, "gpus");
}

}  // namespace
}  // namespace gpuscale::gpu
