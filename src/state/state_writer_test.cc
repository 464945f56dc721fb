#include "state/state_writer.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "state/store_health.h"
#include "store/store.h"

namespace gpuscale::state {
namespace {

class StateWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<store::Store>> opened = store::Store::Open(":memory:", Seconds{0});
    ASSERT_TRUE(opened) << opened.error().ToString();
    store_ = std::move(*opened);
  }

  static store::ReplicaRow Row(const std::string& service, const std::string& id) {
    store::ReplicaRow row;
    row.id = id;
    row.service = service;
    row.phase = "ready";
    return row;
  }
  static store::DecisionRow Decision(Seconds at, int current, int ready) {
    store::DecisionRow row;
    row.service = "chat";
    row.at = at;
    row.policy = "rules";
    row.current_replicas = current;
    row.ready_replicas = ready;
    row.desired_replicas = current;
    return row;
  }
  size_t Decisions() { return store_->decisions().Recent("chat", 100)->size(); }

  std::vector<std::string> logged_;
  StoreHealth health_{[this](std::string_view m) { logged_.emplace_back(m); }};
  std::unique_ptr<store::Store> store_;
};

// Unchanged rows are not written again: updated_at keeps the first write's time.
TEST_F(StateWriterTest, ReplicaRowsAreWrittenOnlyWhenTheyChange) {
  StateWriter writer(*store_, health_, Seconds{300});
  writer.WriteReplicas("chat", {Row("chat", "chat-0")}, Seconds{10});
  writer.WriteReplicas("chat", {Row("chat", "chat-0")}, Seconds{20});
  EXPECT_EQ(store_->replicas().Get("chat-0")->updated_at, Seconds{10});
  store::ReplicaRow moved = Row("chat", "chat-0");
  moved.port = 8001;
  writer.WriteReplicas("chat", {moved}, Seconds{30});
  EXPECT_EQ(store_->replicas().Get("chat-0")->updated_at, Seconds{30});
  EXPECT_EQ(store_->replicas().Get("chat-0")->port, 8001);
  // An empty set is written once too (the service scaled to zero).
  writer.WriteReplicas("chat", {}, Seconds{40});
  EXPECT_TRUE(store_->replicas().ListForService("chat")->empty());
}

// A failed write is shown by StoreHealth under its kind until the same kind succeeds, and it
// is tried again even though the rows did not change.
TEST_F(StateWriterTest, AFailedWriteIsReportedAndRetriedUntilItSucceeds) {
  StateWriter writer(*store_, health_, Seconds{300});
  // Rows of another service make ReplaceForService refuse the write.
  writer.WriteReplicas("chat", {Row("other", "x-0")}, Seconds{10});
  ASSERT_EQ(health_.Failures().size(), 1u);
  EXPECT_NE(health_.Failures()[0].find("writing replicas of chat"), std::string::npos);
  EXPECT_EQ(health_.error_count(), 1);
  ASSERT_EQ(logged_.size(), 1u);
  writer.WriteReplicas("chat", {Row("other", "x-0")}, Seconds{11});
  EXPECT_EQ(health_.error_count(), 2);  // not remembered as written: tried again
  writer.WriteReplicas("chat", {Row("chat", "chat-0")}, Seconds{12});
  EXPECT_TRUE(health_.Failures().empty());
  EXPECT_EQ(health_.error_count(), 2);
}

TEST_F(StateWriterTest, LeasesAreWrittenFirstAlwaysThenOnChange) {
  StateWriter writer(*store_, health_, Seconds{300});
  writer.WriteLeases({});  // the first write clears whatever a crashed daemon left
  EXPECT_TRUE(store_->leases().List()->empty());
  store::LeaseRow lease{"gpu-0", 0, "local", "replica/chat-0", Seconds{5}};
  writer.WriteLeases({lease});
  ASSERT_EQ(store_->leases().List()->size(), 1u);
  ASSERT_TRUE(store_->leases().ReplaceAll({}));  // behind the writer's back
  writer.WriteLeases({lease});                   // unchanged since its last write: skipped
  EXPECT_TRUE(store_->leases().List()->empty());
}

// Decisions: a row when the decision or the counts change, else one per heartbeat; a new
// spec's first decision is always recorded.
TEST_F(StateWriterTest, DecisionsAreWrittenOnChangeAndOnTheHeartbeat) {
  StateWriter writer(*store_, health_, Seconds{300});
  writer.WriteDecision(Decision(Seconds{0}, 1, 1), false);  // first: written
  writer.WriteDecision(Decision(Seconds{10}, 1, 1), false);
  EXPECT_EQ(Decisions(), 1u);
  writer.WriteDecision(Decision(Seconds{20}, 2, 1), false);  // counts changed
  writer.WriteDecision(Decision(Seconds{30}, 2, 1), true);   // decision changed
  EXPECT_EQ(Decisions(), 3u);
  writer.WriteDecision(Decision(Seconds{329}, 2, 1), false);
  EXPECT_EQ(Decisions(), 3u);
  writer.WriteDecision(Decision(Seconds{330}, 2, 1), false);  // heartbeat due
  EXPECT_EQ(Decisions(), 4u);
  writer.ForgetDecision("chat");
  writer.WriteDecision(Decision(Seconds{331}, 2, 1), false);
  EXPECT_EQ(Decisions(), 5u);
}

// A decision the store refused (a trigger stands in for the full disk) is not remembered as
// written: the next call writes, although nothing changed and no heartbeat is due, so the
// failure leaves StoreHealth as soon as the store takes writes again.
TEST_F(StateWriterTest, AFailedDecisionIsWrittenOnTheNextCallWhateverItSays) {
  StateWriter writer(*store_, health_, Seconds{300});
  const char* full =
      "CREATE TRIGGER full BEFORE INSERT ON decisions "
      "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END";
  {
    std::lock_guard<std::mutex> lock(store_->database().mu());
    ASSERT_TRUE(store_->database().Exec(full));
  }
  writer.WriteDecision(Decision(Seconds{0}, 1, 1), true);
  ASSERT_EQ(health_.Failures().size(), 1u);
  EXPECT_NE(health_.Failures()[0].find("writing a decision of chat"), std::string::npos);
  EXPECT_EQ(Decisions(), 0u);
  {
    std::lock_guard<std::mutex> lock(store_->database().mu());
    ASSERT_TRUE(store_->database().Exec("DROP TRIGGER full"));
  }
  writer.WriteDecision(Decision(Seconds{10}, 1, 1), false);
  EXPECT_EQ(Decisions(), 1u);
  EXPECT_TRUE(health_.Failures().empty());
}

// A service's failing replica writes leave with the service: nothing retries them any more.
TEST_F(StateWriterTest, ForgettingAServiceClearsItsFailingReplicaWrites) {
  StateWriter writer(*store_, health_, Seconds{300});
  writer.WriteReplicas("chat", {Row("other", "x-0")}, Seconds{10});  // refused: another service
  ASSERT_EQ(health_.Failures().size(), 1u);
  writer.Forget("chat");
  EXPECT_TRUE(health_.Failures().empty());
}

}  // namespace
}  // namespace gpuscale::state
