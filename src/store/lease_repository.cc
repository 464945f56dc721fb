#include "store/lease_repository.h"

#include <fmt/format.h>

#include <mutex>

namespace gpuscale::store {

Status LeaseRepository::PutLocked(const LeaseRow& lease) {
  if (lease.key.empty()) return InvalidArgument("expected a non-empty lease key", "key");
  if (lease.owner.empty()) {
    return InvalidArgument(fmt::format("lease '{}' has no owner", lease.key), "owner");
  }
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare("INSERT OR REPLACE INTO leases (key, gpu_index, node, owner, "
                                  "acquired_at) VALUES (?1, ?2, ?3, ?4, ?5)"));
  stmt.Bind(1, lease.key)
      .Bind(2, int64_t{lease.gpu_index})
      .Bind(3, lease.node)
      .Bind(4, lease.owner)
      .Bind(5, lease.acquired_at.count());
  return stmt.Run();
}

Status LeaseRepository::Put(const LeaseRow& lease) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return PutLocked(lease);
}

Status LeaseRepository::ReplaceAll(const std::vector<LeaseRow>& leases) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return db_.InTransaction([&]() -> Status {
    GS_RETURN_IF_ERROR(db_.Exec("DELETE FROM leases"));
    for (const LeaseRow& lease : leases) GS_RETURN_IF_ERROR(PutLocked(lease));
    return OkStatus();
  });
}

Status LeaseRepository::Delete(std::string_view key) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("DELETE FROM leases WHERE key = ?1"));
  stmt.Bind(1, key);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) return NotFound(fmt::format("GPU '{}' is not leased", key), "key");
  return OkStatus();
}

Result<int64_t> LeaseRepository::DeleteOwner(std::string_view owner) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("DELETE FROM leases WHERE owner = ?1"));
  stmt.Bind(1, owner);
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.Changes();
}

Result<std::vector<LeaseRow>> LeaseRepository::Select(std::string_view where,
                                                      std::string_view arg) {
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare(fmt::format(
          "SELECT key, gpu_index, node, owner, acquired_at FROM leases {} ORDER BY key", where)));
  if (!where.empty()) stmt.Bind(1, arg);
  std::vector<LeaseRow> leases;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return leases;
    leases.push_back(LeaseRow{stmt.ColumnText(0), static_cast<int>(stmt.ColumnInt64(1)),
                              stmt.ColumnText(2), stmt.ColumnText(3),
                              Seconds{stmt.ColumnDouble(4)}});
  }
}

Result<std::vector<LeaseRow>> LeaseRepository::List() {
  std::lock_guard<std::mutex> lock(db_.mu());
  return Select("", "");
}

Result<std::vector<LeaseRow>> LeaseRepository::ListForOwner(std::string_view owner) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return Select("WHERE owner = ?1", owner);
}

}  // namespace gpuscale::store
