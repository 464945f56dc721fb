#include "daemon/slurm_adapter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpuscale::daemon {
namespace {

class SlurmAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscale_slurm_adapter_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    service_.name = "chat";
    service_.engine = "slurm";
    service_.command = {"srv", "--port", "{port}"};
    service_.gpus_per_replica = 2;
    service_.max_replicas = 6;
    service_.slurm.partition = "gpu";
    service_.slurm.gres_type = "a100";
    service_.slurm.port_range_start = 21000;
    service_.slurm.port_range_end = 21010;
    options_.state_dir = dir_.string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  ServiceConfig service_;
  SlurmAdapterOptions options_;
};

TEST_F(SlurmAdapterTest, MapsTheServiceOntoTheOrchestratorConfig) {
  const orch::SlurmOrchestratorConfig c = SlurmOrchestratorConfigFor(service_, options_);
  EXPECT_EQ(c.service, "chat");
  EXPECT_EQ(c.gpus_per_replica, 2);
  EXPECT_EQ(c.gres_type, "a100");
  EXPECT_EQ(c.partition, "gpu");
  EXPECT_EQ(c.max_replicas, 6);
  EXPECT_EQ(c.port_range_start, 21000);
  EXPECT_EQ(c.port_range_end, 21010);
  EXPECT_EQ(c.state_dir, dir_.string());
  auto orch = MakeSlurmOrchestrator(service_, options_);
  ASSERT_TRUE(orch) << orch.error().ToString();
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "slurm"));
}

TEST_F(SlurmAdapterTest, RestTokenFileMustBeReadable) {
  service_.slurm.transport = "rest";
  service_.slurm.url = "http://127.0.0.1:1";
  service_.slurm.token_file = (dir_ / "missing.jwt").string();
  auto missing = MakeSlurmOrchestrator(service_, options_);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().field, "slurm.token_file");
  std::ofstream(dir_ / "token.jwt") << "  eyJ.token  \nignored\n";
  service_.slurm.token_file = (dir_ / "token.jwt").string();
  EXPECT_TRUE(MakeSlurmOrchestrator(service_, options_));
}

}  // namespace
}  // namespace gpuscale::daemon
