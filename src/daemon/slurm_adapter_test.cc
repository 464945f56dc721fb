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

TEST_F(SlurmAdapterTest, ServicesOfOneClusterShareItsListings) {
  orch::SlurmClusters clusters;
  options_.clusters = &clusters;
  auto chat = MakeSlurmOrchestrator(service_, options_);
  service_.name = "code";
  service_.slurm.partition = "other";  // where jobs go does not change what a listing shows
  auto code = MakeSlurmOrchestrator(service_, options_);
  ASSERT_TRUE(chat && code);
  EXPECT_EQ(clusters.hubs(), 1u);
  service_.name = "elsewhere";
  service_.slurm.slurm_conf = "/etc/slurm/other-cluster.conf";
  auto elsewhere = MakeSlurmOrchestrator(service_, options_);
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(clusters.hubs(), 2u);
  elsewhere->reset();
  chat->reset();
  EXPECT_EQ(clusters.hubs(), 1u) << "code still lists through its cluster's hub";
}

TEST_F(SlurmAdapterTest, AClusterKeyNamesWhatAListingDependsOn) {
  SlurmServiceConfig rest;
  rest.transport = "rest";
  rest.url = "http://127.0.0.1:6820";
  rest.user = "svc";
  const std::string key = SlurmClusterKey(rest, "jwt-a");
  EXPECT_EQ(SlurmClusterKey(rest, "jwt-a"), key);
  EXPECT_NE(SlurmClusterKey(rest, "jwt-b"), key) << "another token may see other jobs";
  SlurmServiceConfig other_user = rest;
  other_user.user = "ops";
  EXPECT_NE(SlurmClusterKey(other_user, "jwt-a"), key);
  SlurmServiceConfig slower = rest;
  slower.timeout = Seconds(60);
  EXPECT_NE(SlurmClusterKey(slower, "jwt-a"), key);
  SlurmServiceConfig cli;
  cli.bin_dir = "/opt/slurm/bin";
  EXPECT_NE(SlurmClusterKey(cli, ""), SlurmClusterKey(rest, ""));
  SlurmServiceConfig other_bins = cli;
  other_bins.bin_dir = "/usr/bin";
  EXPECT_NE(SlurmClusterKey(other_bins, ""), SlurmClusterKey(cli, ""));
}

}  // namespace
}  // namespace gpuscale::daemon
