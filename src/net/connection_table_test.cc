#include "net/connection_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::net {
namespace {

// Admits a connection from `peer` that then waits for a header; its close appends its name
// to `closed`.
ConnectionTable::Id AdmitWaiting(ConnectionTable& table, const std::string& peer,
                                 std::vector<ConnectionTable::Id>& closed) {
  ConnectionTable::Admission a = table.Admit(peer);
  EXPECT_TRUE(a.admitted);
  if (a.evict) a.evict();
  table.Waiting(a.id, [&closed, id = a.id] { closed.push_back(id); });
  return a.id;
}

TEST(ConnectionTableTest, AFullTableDisplacesTheConnectionWaitingLongestNotABusyOne) {
  ConnectionTable table(/*max_total=*/3, /*max_per_peer=*/0);
  std::vector<ConnectionTable::Id> closed;
  const auto busy = AdmitWaiting(table, "10.0.0.1", closed);
  ASSERT_TRUE(table.Active(busy));  // sent a request
  const auto older = AdmitWaiting(table, "10.0.0.2", closed);
  const auto newer = AdmitWaiting(table, "10.0.0.3", closed);
  ASSERT_EQ(table.size(), 3);

  const auto health = AdmitWaiting(table, "127.0.0.1", closed);  // the 4th: displaces `older`
  EXPECT_EQ(closed, std::vector<ConnectionTable::Id>{older});
  EXPECT_TRUE(table.Displaced(older));
  EXPECT_FALSE(table.Active(older)) << "a displaced connection must not serve its request";
  EXPECT_TRUE(table.Active(health));
  EXPECT_EQ(table.size(), 3);
  EXPECT_EQ(table.displaced(), 1);

  table.Remove(older);  // its session ends
  EXPECT_FALSE(table.Displaced(older));
  AdmitWaiting(table, "10.0.0.4", closed);  // displaces `newer`, the only one waiting
  EXPECT_EQ(closed, (std::vector<ConnectionTable::Id>{older, newer}));
}

TEST(ConnectionTableTest, ANewcomerIsRefusedWhenEverySlotIsBusy) {
  ConnectionTable table(2, 0);
  std::vector<ConnectionTable::Id> closed;
  ASSERT_TRUE(table.Active(AdmitWaiting(table, "a", closed)));
  ASSERT_TRUE(table.Active(AdmitWaiting(table, "b", closed)));
  EXPECT_FALSE(table.Admit("c").admitted);
  EXPECT_TRUE(closed.empty());
}

TEST(ConnectionTableTest, APeerAtItsCapDisplacesOnlyItsOwnWaitingConnections) {
  ConnectionTable table(/*max_total=*/100, /*max_per_peer=*/2);
  std::vector<ConnectionTable::Id> closed;
  const auto other = AdmitWaiting(table, "10.0.0.9", closed);  // older, another peer
  const auto first = AdmitWaiting(table, "10.0.0.1", closed);
  const auto second = AdmitWaiting(table, "10.0.0.1", closed);
  AdmitWaiting(table, "10.0.0.1", closed);  // over the peer cap: its own oldest goes
  EXPECT_EQ(closed, std::vector<ConnectionTable::Id>{first});
  EXPECT_FALSE(table.Displaced(other));
  ASSERT_TRUE(table.Active(second));
  // Its two are now `second` (busy) and the third (waiting): the next displaces the third.
  AdmitWaiting(table, "10.0.0.1", closed);
  EXPECT_EQ(closed.size(), 2u);
  EXPECT_FALSE(table.Displaced(second));
  // Another peer is under its own cap and the total has room: admitted, nobody displaced.
  AdmitWaiting(table, "10.0.0.2", closed);
  EXPECT_EQ(closed.size(), 2u);
}

TEST(ConnectionTableTest, APeerWhoseConnectionsAreAllBusyIsRefused) {
  ConnectionTable table(100, 1);
  std::vector<ConnectionTable::Id> closed;
  ASSERT_TRUE(table.Active(AdmitWaiting(table, "10.0.0.1", closed)));
  EXPECT_FALSE(table.Admit("10.0.0.1").admitted);
  EXPECT_TRUE(table.Admit("10.0.0.2").admitted);
}

TEST(ConnectionTableTest, AKeptAliveConnectionWaitingForItsNextRequestCanBeDisplaced) {
  ConnectionTable table(1, 0);
  std::vector<ConnectionTable::Id> closed;
  const auto id = AdmitWaiting(table, "a", closed);
  ASSERT_TRUE(table.Active(id));
  table.Waiting(id, [&closed, id] { closed.push_back(id); });  // response sent, kept alive
  AdmitWaiting(table, "b", closed);
  EXPECT_EQ(closed, std::vector<ConnectionTable::Id>{id});
}

}  // namespace
}  // namespace gpuscale::net
