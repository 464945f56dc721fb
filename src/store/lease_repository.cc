#include "store/lease_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/tables.h"

namespace gpuscale::store {

Status LeaseRepository::PutLocked(const LeaseRow& lease) {
  if (lease.key.empty()) return InvalidArgument("expected a non-empty lease key", "key");
  if (lease.owner.empty()) {
    return InvalidArgument(fmt::format("lease '{}' has no owner", lease.key), "owner");
  }
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kLeases.Insert("INSERT OR REPLACE")));
  kLeases.BindInsert(stmt, lease);
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
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("{} {} ORDER BY key", kLeases.Select(), where)));
  if (!where.empty()) stmt.Bind(1, arg);
  std::vector<LeaseRow> leases;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return leases;
    GS_ASSIGN_OR_RETURN(LeaseRow lease, kLeases.Read(stmt));
    leases.push_back(std::move(lease));
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
