#include "cli/descriptor_plan.h"

#include <gtest/gtest.h>

namespace gpuscale::cli {
namespace {

// The case a user hit: a 20,000-descriptor limit and the gateway's default of 20,000 clients.
// Each proxied request holds two descriptors, so 10,500 clients took every descriptor and
// the daemon's probes failed. The plan keeps the control plane's share whole.
TEST(DescriptorPlanTest, TheGatewayGetsWhatIsLeftAfterTheControlPlaneAndTheApi) {
  Result<DescriptorPlan> plan = PlanDescriptors({.limit = 20000,
                                                 .in_use = 40,
                                                 .api_max_connections = 4096,
                                                 .gateway_max_connections = 20000,
                                                 .gateway_max_idle_upstream = 4096});
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->control_reserve, 512);
  const int available = 20000 - 40 - 512;
  EXPECT_EQ(plan->api_max_connections, available / 8);
  const int left = available - plan->api_max_connections;
  EXPECT_EQ(plan->gateway_max_idle_upstream, left / 8);
  EXPECT_EQ(plan->gateway_max_connections, (left - left / 8) / 2);
  // Everything the data plane may hold at once, with the control share, fits the limit.
  EXPECT_LE(40 + plan->control_reserve + plan->api_max_connections +
                2 * plan->gateway_max_connections + plan->gateway_max_idle_upstream,
            20000);
  ASSERT_EQ(plan->notes.size(), 2u);
  EXPECT_NE(plan->notes[1].find("gateway.max_connections 20000 lowered to"), std::string::npos)
      << plan->notes[1];
  EXPECT_NE(plan->notes[1].find("ulimit -n"), std::string::npos);
}

TEST(DescriptorPlanTest, AGenerousLimitLowersNothing) {
  Result<DescriptorPlan> plan = PlanDescriptors({.limit = 1 << 20,
                                                 .in_use = 40,
                                                 .api_max_connections = 4096,
                                                 .gateway_max_connections = 20000,
                                                 .gateway_max_idle_upstream = 4096});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->api_max_connections, 4096);
  EXPECT_EQ(plan->gateway_max_connections, 20000);
  EXPECT_EQ(plan->gateway_max_idle_upstream, 4096);
  EXPECT_TRUE(plan->notes.empty());
}

TEST(DescriptorPlanTest, ALimitTooSmallToServeIsAnErrorSayingHowToRaiseIt) {
  Result<DescriptorPlan> plan =
      PlanDescriptors({.limit = 128, .in_use = 60, .gateway_max_connections = 100});
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(plan.error().message.find("ulimit -n"), std::string::npos) << plan.error().message;
}

TEST(DescriptorPlanTest, WithoutAGatewayTheApiMayUseAllThatIsLeft) {
  Result<DescriptorPlan> plan =
      PlanDescriptors({.limit = 1024, .in_use = 24, .api_max_connections = 4096});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->api_max_connections, 1024 - 24 - 256);
  EXPECT_EQ(plan->gateway_max_connections, 0);
}

}  // namespace
}  // namespace gpuscale::cli
