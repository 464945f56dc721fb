#include "store/replica_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/tables.h"

namespace gpuscale::store {

Status ReplicaRepository::PutLocked(const ReplicaRow& replica) {
  if (replica.id.empty()) return InvalidArgument("expected a non-empty replica id", "id");
  if (replica.service.empty()) {
    return InvalidArgument(fmt::format("replica '{}' has no service", replica.id), "service");
  }
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kReplicas.Insert("INSERT OR REPLACE")));
  kReplicas.BindInsert(stmt, replica);
  return stmt.Run();
}

Status ReplicaRepository::Put(const ReplicaRow& replica) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return PutLocked(replica);
}

Status ReplicaRepository::ReplaceForService(std::string_view service,
                                            const std::vector<ReplicaRow>& replicas) {
  for (const ReplicaRow& replica : replicas) {
    if (replica.service != service) {
      return InvalidArgument(fmt::format("replica '{}' belongs to service '{}', not '{}'",
                                         replica.id, replica.service, service),
                             "service");
    }
  }
  std::lock_guard<std::mutex> lock(db_.mu());
  return db_.InTransaction([&]() -> Status {
    GS_ASSIGN_OR_RETURN(Statement clear, db_.Prepare("DELETE FROM replicas WHERE service = ?1"));
    clear.Bind(1, service);
    GS_RETURN_IF_ERROR(clear.Run());
    for (const ReplicaRow& replica : replicas) GS_RETURN_IF_ERROR(PutLocked(replica));
    return OkStatus();
  });
}

Result<std::vector<ReplicaRow>> ReplicaRepository::Select(std::string_view where,
                                                          std::string_view arg) {
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(fmt::format("{} {} ORDER BY service, id",
                                                              kReplicas.Select(), where)));
  if (!where.empty()) stmt.Bind(1, arg);
  std::vector<ReplicaRow> replicas;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return replicas;
    GS_ASSIGN_OR_RETURN(ReplicaRow replica, kReplicas.Read(stmt));
    replicas.push_back(std::move(replica));
  }
}

Result<ReplicaRow> ReplicaRepository::Get(std::string_view id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(std::vector<ReplicaRow> rows, Select("WHERE id = ?1", id));
  if (rows.empty()) return NotFound(fmt::format("no replica '{}'", id), "id");
  return std::move(rows.front());
}

Result<std::vector<ReplicaRow>> ReplicaRepository::List() {
  std::lock_guard<std::mutex> lock(db_.mu());
  return Select("", "");
}

Result<std::vector<ReplicaRow>> ReplicaRepository::ListForService(std::string_view service) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return Select("WHERE service = ?1", service);
}

Status ReplicaRepository::Delete(std::string_view id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("DELETE FROM replicas WHERE id = ?1"));
  stmt.Bind(1, id);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) return NotFound(fmt::format("no replica '{}'", id), "id");
  return OkStatus();
}

Status ReplicaRepository::DeleteAll() {
  std::lock_guard<std::mutex> lock(db_.mu());
  return db_.Exec("DELETE FROM replicas");
}

}  // namespace gpuscale::store
