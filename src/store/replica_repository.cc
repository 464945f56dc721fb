#include "store/replica_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/json_columns.h"

namespace gpuscale::store {
namespace {

constexpr std::string_view kColumns =
    "id, service, phase, pid, port, gpus, gpu_keys, lease_owner, argv, log_path, restarts, "
    "started_at, phase_since, updated_at, host, engine_id";

Result<ReplicaRow> ReadRow(const Statement& stmt) {
  ReplicaRow replica;
  replica.id = stmt.ColumnText(0);
  replica.service = stmt.ColumnText(1);
  replica.phase = stmt.ColumnText(2);
  replica.pid = stmt.ColumnInt64(3);
  replica.port = static_cast<int>(stmt.ColumnInt64(4));
  GS_ASSIGN_OR_RETURN(replica.gpus, IntsFromJson(stmt.ColumnText(5), "replicas.gpus"));
  GS_ASSIGN_OR_RETURN(replica.gpu_keys, StringsFromJson(stmt.ColumnText(6), "replicas.gpu_keys"));
  replica.lease_owner = stmt.ColumnText(7);
  GS_ASSIGN_OR_RETURN(replica.argv, StringsFromJson(stmt.ColumnText(8), "replicas.argv"));
  replica.log_path = stmt.ColumnText(9);
  replica.restarts = static_cast<int>(stmt.ColumnInt64(10));
  replica.started_at = Seconds{stmt.ColumnDouble(11)};
  replica.phase_since = Seconds{stmt.ColumnDouble(12)};
  replica.updated_at = Seconds{stmt.ColumnDouble(13)};
  replica.host = stmt.ColumnText(14);
  replica.engine_id = stmt.ColumnText(15);
  return replica;
}

}  // namespace

Status ReplicaRepository::PutLocked(const ReplicaRow& replica) {
  if (replica.id.empty()) return InvalidArgument("expected a non-empty replica id", "id");
  if (replica.service.empty()) {
    return InvalidArgument(fmt::format("replica '{}' has no service", replica.id), "service");
  }
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("INSERT OR REPLACE INTO replicas ({}) VALUES (?1, "
                                              "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                              "?13, ?14, ?15, ?16)",
                                              kColumns)));
  stmt.Bind(1, replica.id)
      .Bind(2, replica.service)
      .Bind(3, replica.phase)
      .Bind(4, replica.pid)
      .Bind(5, int64_t{replica.port})
      .Bind(6, IntsToJson(replica.gpus))
      .Bind(7, StringsToJson(replica.gpu_keys))
      .Bind(8, replica.lease_owner)
      .Bind(9, StringsToJson(replica.argv))
      .Bind(10, replica.log_path)
      .Bind(11, int64_t{replica.restarts})
      .Bind(12, replica.started_at.count())
      .Bind(13, replica.phase_since.count())
      .Bind(14, replica.updated_at.count())
      .Bind(15, replica.host)
      .Bind(16, replica.engine_id);
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
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("SELECT {} FROM replicas {} ORDER BY service, id",
                                              kColumns, where)));
  if (!where.empty()) stmt.Bind(1, arg);
  std::vector<ReplicaRow> replicas;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return replicas;
    GS_ASSIGN_OR_RETURN(ReplicaRow replica, ReadRow(stmt));
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

}  // namespace gpuscale::store
