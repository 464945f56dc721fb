// Row comparisons the daemon uses to skip store writes that would change nothing.
#include "daemon/replica_rows.h"

#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

store::ReplicaRow Row(const std::string& id) {
  store::ReplicaRow row;
  row.id = id;
  row.service = "chat";
  row.phase = "ready";
  row.gpus = {0};
  return row;
}

TEST(ReplicaRowsTest, SameReplicaRowsIgnoresOnlyTheWriteTime) {
  const std::vector<store::ReplicaRow> persisted = {Row("chat-0"), Row("chat-1")};
  std::vector<store::ReplicaRow> stamped = persisted;
  stamped[1].updated_at = Seconds{42};  // when it was written, not what the replica is
  EXPECT_TRUE(SameReplicaRows(stamped, persisted));

  std::vector<store::ReplicaRow> moved = persisted;
  moved[1].gpus = {1};
  EXPECT_FALSE(SameReplicaRows(moved, persisted));
  std::vector<store::ReplicaRow> other_host = persisted;
  other_host[0].host = "10.0.0.7";
  EXPECT_FALSE(SameReplicaRows(other_host, persisted));
  EXPECT_FALSE(SameReplicaRows({persisted[0]}, persisted));
  EXPECT_FALSE(SameReplicaRows({persisted[1], persisted[0]}, persisted));  // order matters
}

TEST(ReplicaRowsTest, SameLeaseRowsComparesEveryField) {
  const std::vector<store::LeaseRow> leases = {{"GPU-a", 0, "n1", "replica/chat-0", Seconds{1}}};
  EXPECT_TRUE(SameLeaseRows(leases, leases));
  std::vector<store::LeaseRow> later = leases;
  later[0].acquired_at = Seconds{2};
  EXPECT_FALSE(SameLeaseRows(later, leases));
  EXPECT_FALSE(SameLeaseRows({}, leases));
}

}  // namespace
}  // namespace gpuscale::daemon
