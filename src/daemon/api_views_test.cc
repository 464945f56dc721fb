// Daemon records -> API views: every field carried, none left at its default.
#include "daemon/api_views.h"

#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

TEST(ApiViewsTest, ReplicaViewCarriesEveryField) {
  orch::ReplicaInfo r;
  r.id = "chat-2";
  r.phase = scale::ReplicaPhase::kDraining;
  r.state = orch::ReplicaState::kDraining;
  r.phase_since = Seconds{11};
  r.host = "10.0.0.7";
  r.port = 20001;
  r.gpus = {2, 3};
  r.gpu_keys = {"GPU-a", "GPU-b"};
  r.lease_owner = "replica/chat-2";
  r.pid = 4242;
  r.log_path = "/tmp/chat-2.log";
  r.restarts = 3;
  r.started_at = Seconds{7};
  r.uptime = Seconds{5};
  r.outstanding_requests = 9;
  r.adopted = true;
  r.serving = false;
  r.last_error = "crashed";
  r.start_error = "cannot start";
  const ReplicaView v = ToReplicaView(r);
  const ReplicaView want{.id = "chat-2",
                         .phase = scale::ReplicaPhase::kDraining,
                         .state = "draining",
                         .phase_since = Seconds{11},
                         .host = "10.0.0.7",
                         .port = 20001,
                         .gpus = {2, 3},
                         .gpu_keys = {"GPU-a", "GPU-b"},
                         .lease_owner = "replica/chat-2",
                         .pid = 4242,
                         .log_path = "/tmp/chat-2.log",
                         .restarts = 3,
                         .started_at = Seconds{7},
                         .uptime = Seconds{5},
                         .outstanding_requests = 9,
                         .adopted = true,
                         .serving = false,
                         .last_error = "crashed",
                         .start_error = "cannot start"};
  EXPECT_EQ(v, want);
}

TEST(ApiViewsTest, RuleRoundTripsThroughTheStoreRow) {
  const RuleView rule{.id = 5,
                      .service = "chat",
                      .name = "queue",
                      .source = "prometheus",
                      .metric = "sum(q)",
                      .aggregation = "max",
                      .comparator = "LESS_THAN",
                      .threshold = 2.5,
                      .step_size = -2,
                      .cooldown = Seconds{30},
                      .min_replicas = 1,
                      .max_replicas = 6,
                      .enabled = false,
                      .created_at = Seconds{99}};
  const store::RuleRow row = ToRuleRow(rule);
  EXPECT_EQ(row.metric, "sum(q)");
  EXPECT_EQ(row.step_size, -2);
  EXPECT_FALSE(row.enabled);
  EXPECT_EQ(ToRuleView(row), rule);
}

TEST(ApiViewsTest, EventAndQueryCarryEveryField) {
  const store::EventRow row{.id = 8,
                            .at = Seconds{12},
                            .service = "chat",
                            .kind = "replica_crashed",
                            .replica = "chat-1",
                            .message = "exit 1",
                            .data = "{}"};
  EXPECT_EQ(ToEventView(row), (EventView{.id = 8,
                                         .at = Seconds{12},
                                         .service = "chat",
                                         .kind = "replica_crashed",
                                         .replica = "chat-1",
                                         .message = "exit 1",
                                         .data = "{}"}));
  const store::EventQuery q = ToStoreQuery(EventQuery{
      .since_id = 3, .service = "chat", .kind = events::EventKind::kDecision, .limit = 7});
  EXPECT_EQ(q.since_id, 3);
  EXPECT_EQ(q.service, "chat");
  EXPECT_EQ(q.kind, "decision");
  EXPECT_EQ(q.limit, 7);
  EXPECT_EQ(ToStoreQuery(EventQuery{}).kind, "");  // no kind: every kind
}

// A row written by another version may hold a kind this one does not know: it is shown as
// stored, not dropped or guessed.
TEST(ApiViewsTest, EventOfAnUnknownKindKeepsItsStoredText) {
  ASSERT_FALSE(events::ParseEventKind("replica_hibernated"));
  store::EventRow row;
  row.kind = "replica_hibernated";
  EXPECT_EQ(ToEventView(row).kind, "replica_hibernated");
}

}  // namespace
}  // namespace gpuscale::daemon
