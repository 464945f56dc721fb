#include "events/event_kind.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpuscale::events {
namespace {

TEST(EventKindTest, EveryKindHasItsOwnNameAndParsesBack) {
  ASSERT_EQ(AllEventKinds().size(), static_cast<size_t>(kEventKindCount));
  std::set<std::string_view> names;
  for (int i = 0; i < kEventKindCount; ++i) {
    const auto kind = static_cast<EventKind>(i);
    EXPECT_EQ(AllEventKinds()[i], kind) << i;
    const std::string_view name = EventKindName(kind);
    EXPECT_NE(name, "unknown") << i;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    Result<EventKind> parsed = ParseEventKind(name);
    ASSERT_TRUE(parsed) << name;
    EXPECT_EQ(*parsed, kind) << name;
  }
}

// The wire names are what stored databases and the dashboard hold: a few pinned spellings.
TEST(EventKindTest, WireNamesStayAsStored) {
  EXPECT_EQ(EventKindName(EventKind::kDecision), "decision");
  EXPECT_EQ(EventKindName(EventKind::kReplicaStarted), "replica_started");
  EXPECT_EQ(EventKindName(EventKind::kReplicaRestartScheduled), "replica_restart_scheduled");
  EXPECT_EQ(EventKindName(EventKind::kConfigReloadFailed), "config_reload_failed");
  EXPECT_EQ(EventKindName(EventKind::kExperimentSucceeded), "experiment_succeeded");
  EXPECT_EQ(EventKindName(EventKind::kGatewayStats), "gateway_stats");
}

TEST(EventKindTest, UnknownNameIsRefusedNamingTheFieldAndTheKnownKinds) {
  Result<EventKind> parsed = ParseEventKind("replica_exploded", "kind");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.error().field, "kind");
  EXPECT_NE(parsed.error().message.find("unknown event kind 'replica_exploded'"),
            std::string::npos);
  EXPECT_NE(parsed.error().message.find("decision, "), std::string::npos);
  EXPECT_NE(parsed.error().message.find("gateway_stats"), std::string::npos);
  EXPECT_FALSE(ParseEventKind(""));
  EXPECT_FALSE(ParseEventKind("Decision"));
}

}  // namespace
}  // namespace gpuscale::events
