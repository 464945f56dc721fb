#include "store/service_repository.h"

#include <fmt/format.h>

#include <mutex>

namespace gpuscale::store {
namespace {

constexpr std::string_view kColumns = "name, spec, paused, created_at, updated_at";

ServiceRow ReadRow(const Statement& stmt) {
  return ServiceRow{stmt.ColumnText(0), stmt.ColumnText(1), stmt.ColumnInt64(2) != 0,
                    Seconds{stmt.ColumnDouble(3)}, Seconds{stmt.ColumnDouble(4)}};
}

}  // namespace

Status ServiceRepository::Put(const ServiceRow& service) {
  if (service.name.empty()) return InvalidArgument("expected a non-empty service name", "name");
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare("INSERT INTO services (name, spec, paused, created_at, updated_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET "
                  "spec = excluded.spec, paused = excluded.paused, "
                  "updated_at = excluded.updated_at"));
  stmt.Bind(1, service.name)
      .Bind(2, service.spec)
      .Bind(3, int64_t{service.paused ? 1 : 0})
      .Bind(4, service.created_at.count())
      .Bind(5, service.updated_at.count());
  return stmt.Run();
}

Result<ServiceRow> ServiceRepository::Get(std::string_view name) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(fmt::format(
                                          "SELECT {} FROM services WHERE name = ?1", kColumns)));
  stmt.Bind(1, name);
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NotFound(fmt::format("no service named '{}'", name), "name");
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

Status ServiceRepository::Delete(std::string_view name) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("DELETE FROM services WHERE name = ?1"));
  stmt.Bind(1, name);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) {
    return NotFound(fmt::format("no service named '{}'", name), "name");
  }
  return OkStatus();
}

}  // namespace gpuscale::store
