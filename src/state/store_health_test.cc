#include "state/store_health.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::state {
namespace {

// Kinds that nothing writes again (events, API requests) leave when a probe write succeeds;
// kinds whose writer retries them every tick (a service's replicas) stay until that writer
// succeeds, so a small probe never hides a large write that still fails.
TEST(StoreHealthTest, AProbeClearsOnlyTheKindsNoWriterRetries) {
  std::vector<std::string> logged;
  StoreHealth health([&](std::string_view m) { logged.emplace_back(m); });
  EXPECT_FALSE(health.AwaitsProbe());
  const Error full{ErrorCode::kUnavailable, "database or disk is full", ""};
  health.Failed("writing replicas of chat", full, "", StoreHealth::Retry::kByWriter);
  EXPECT_FALSE(health.AwaitsProbe());
  health.Failed("creating service big", full, "API writes");
  EXPECT_TRUE(health.AwaitsProbe());
  ASSERT_EQ(health.Failures().size(), 2u);
  health.ProbeSucceeded();
  ASSERT_EQ(health.Failures().size(), 1u);
  EXPECT_NE(health.Failures()[0].find("writing replicas of chat"), std::string::npos);
  EXPECT_FALSE(health.AwaitsProbe());
  health.Written("writing replicas of chat");
  EXPECT_TRUE(health.Failures().empty());
  EXPECT_EQ(health.error_count(), 2);
  EXPECT_EQ(logged.size(), 2u);
}

}  // namespace
}  // namespace gpuscale::state
