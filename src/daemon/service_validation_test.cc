// The spec checks of an API request, without a daemon: the GPU inventory is a parameter.
#include "daemon/service_validation.h"

#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

gpu::GpuSnapshot Gpus(int count, const std::string& type) {
  gpu::GpuSnapshot snapshot;
  for (int i = 0; i < count; ++i) {
    gpu::GpuInfo g;
    g.index = i;
    g.type = type;
    snapshot.gpus.push_back(g);
  }
  return snapshot;
}

ServiceConfig Local(int gpus_per_replica, int min_replicas) {
  ServiceConfig c;
  c.name = "chat";
  c.command = {"serve"};
  c.gpus_per_replica = gpus_per_replica;
  c.min_replicas = min_replicas;
  c.max_replicas = 4;
  return c;
}

TEST(CheckFitsInventoryTest, RefusesWhatTheInventoryCouldNeverHoldNamingTheField) {
  const Result<gpu::GpuSnapshot> two(Gpus(2, "L4"));
  ASSERT_TRUE(CheckFitsInventory(Local(2, 1), two));
  Status replica = CheckFitsInventory(Local(4, 0), two);
  ASSERT_FALSE(replica);
  EXPECT_EQ(replica.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(replica.error().field, "gpus_per_replica");
  Status floor = CheckFitsInventory(Local(1, 3), two);
  ASSERT_FALSE(floor);
  EXPECT_EQ(floor.error().field, "min_replicas");
  ServiceConfig typed = Local(1, 1);
  typed.gpu_type = "H100-80GB";
  Status type = CheckFitsInventory(typed, two);
  ASSERT_FALSE(type);
  EXPECT_EQ(type.error().field, "gpu_type");
}

TEST(CheckFitsInventoryTest, NoCheckWithoutAnInventoryOrForOtherEngines) {
  const Result<gpu::GpuSnapshot> unknown(Unavailable("no GPU found"));
  EXPECT_TRUE(CheckFitsInventory(Local(64, 1), unknown));
  ServiceConfig slurm = Local(64, 1);
  slurm.engine = "slurm";
  EXPECT_TRUE(CheckFitsInventory(slurm, Result<gpu::GpuSnapshot>(Gpus(1, "L4"))));
}

TEST(ValidateServiceTest, NamesTheFieldAndFillsThePolicyFamily) {
  ServiceConfig bad = Local(1, 1);
  bad.name = "Chat_1";
  Result<ServiceConfig> named = ValidateService(bad, {}, "/tmp/state");
  ASSERT_FALSE(named);
  EXPECT_EQ(named.error().field, "name");
  ServiceConfig bounds = Local(1, 3);
  bounds.max_replicas = 2;
  Result<ServiceConfig> max = ValidateService(bounds, {}, "/tmp/state");
  ASSERT_FALSE(max);
  EXPECT_EQ(max.error().field, "max_replicas");
  Result<ServiceConfig> valid = ValidateService(Local(1, 1), {}, "/tmp/state");
  ASSERT_TRUE(valid) << valid.error().ToString();
  EXPECT_FALSE(valid->policy_family.empty());
}

}  // namespace
}  // namespace gpuscale::daemon
