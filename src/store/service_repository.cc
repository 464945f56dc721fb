#include "store/service_repository.h"

#include <fmt/format.h>

#include <mutex>

namespace gpuscale::store {
namespace {

constexpr std::string_view kColumns =
    "name, spec, paused, created_at, updated_at, deleting, manual_replicas";

ServiceRow ReadRow(const Statement& stmt) {
  ServiceRow row;
  row.name = stmt.ColumnText(0);
  row.spec = stmt.ColumnText(1);
  row.paused = stmt.ColumnInt64(2) != 0;
  row.created_at = Seconds{stmt.ColumnDouble(3)};
  row.updated_at = Seconds{stmt.ColumnDouble(4)};
  row.deleting = stmt.ColumnInt64(5) != 0;
  if (!stmt.ColumnIsNull(6)) row.manual_replicas = static_cast<int>(stmt.ColumnInt64(6));
  return row;
}

void BindManual(Statement& stmt, int index, std::optional<int> replicas) {
  if (replicas) {
    stmt.Bind(index, int64_t{*replicas});
  } else {
    stmt.BindNull(index);
  }
}

Unexpected<Error> NoService(std::string_view name) {
  return NotFound(fmt::format("no service named '{}'", name), "name");
}

}  // namespace

Status ServiceRepository::Put(const ServiceRow& service) {
  if (service.name.empty()) return InvalidArgument("expected a non-empty service name", "name");
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare(fmt::format("INSERT INTO services ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                              "ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, "
                              "paused = excluded.paused, updated_at = excluded.updated_at, "
                              "deleting = excluded.deleting, "
                              "manual_replicas = excluded.manual_replicas",
                              kColumns)));
  stmt.Bind(1, service.name)
      .Bind(2, service.spec)
      .Bind(3, int64_t{service.paused ? 1 : 0})
      .Bind(4, service.created_at.count())
      .Bind(5, service.updated_at.count())
      .Bind(6, int64_t{service.deleting ? 1 : 0});
  BindManual(stmt, 7, service.manual_replicas);
  return stmt.Run();
}

Result<ServiceRow> ServiceRepository::Get(std::string_view name) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(fmt::format(
                                          "SELECT {} FROM services WHERE name = ?1", kColumns)));
  stmt.Bind(1, name);
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NoService(name);
  return ReadRow(stmt);
}

Result<std::vector<ServiceRow>> ServiceRepository::List() {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(fmt::format(
                                          "SELECT {} FROM services ORDER BY name", kColumns)));
  std::vector<ServiceRow> services;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return services;
    services.push_back(ReadRow(stmt));
  }
}

Status ServiceRepository::RunOnOne(Statement& stmt, std::string_view name) {
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) return NoService(name);
  return OkStatus();
}

Status ServiceRepository::Delete(std::string_view name) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("DELETE FROM services WHERE name = ?1"));
  stmt.Bind(1, name);
  return RunOnOne(stmt, name);
}

Status ServiceRepository::MarkDeleting(std::string_view name) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return db_.InTransaction([&]() -> Status {
    GS_ASSIGN_OR_RETURN(Statement mark,
                        db_.Prepare("UPDATE services SET deleting = 1, manual_replicas = NULL "
                                    "WHERE name = ?1"));
    mark.Bind(1, name);
    GS_RETURN_IF_ERROR(RunOnOne(mark, name));
    GS_ASSIGN_OR_RETURN(Statement rules, db_.Prepare("DELETE FROM rules WHERE service = ?1"));
    rules.Bind(1, name);
    return rules.Run();
  });
}

Status ServiceRepository::FinishDeleting(std::string_view name) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare("DELETE FROM services WHERE name = ?1 AND deleting = 1"));
  stmt.Bind(1, name);
  return stmt.Run();
}

Status ServiceRepository::SetManualReplicas(std::string_view name, std::optional<int> replicas) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare("UPDATE services SET manual_replicas = ?2 WHERE name = ?1"));
  stmt.Bind(1, name);
  BindManual(stmt, 2, replicas);
  return RunOnOne(stmt, name);
}

}  // namespace gpuscale::store
