#include "store/service_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/tables.h"

namespace gpuscale::store {
namespace {

Unexpected<Error> NoService(std::string_view name) {
  return NotFound(fmt::format("no service named '{}'", name), "name");
}

}  // namespace

Status ServiceRepository::Put(const ServiceRow& service) {
  if (service.name.empty()) return InvalidArgument("expected a non-empty service name", "name");
  std::lock_guard<std::mutex> lock(db_.mu());
  // An existing service keeps its created_at (the one column the upsert does not assign).
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("{} ON CONFLICT (name) DO UPDATE SET {}",
                                              kServices.Insert(), kServices.Assignments())));
  kServices.BindInsert(stmt, service);
  return stmt.Run();
}

Result<ServiceRow> ServiceRepository::Get(std::string_view name) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kServices.Select() + " WHERE name = ?1"));
  stmt.Bind(1, name);
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NoService(name);
  return kServices.Read(stmt);
}

Result<std::vector<ServiceRow>> ServiceRepository::List() {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kServices.Select() + " ORDER BY name"));
  std::vector<ServiceRow> services;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return services;
    GS_ASSIGN_OR_RETURN(ServiceRow service, kServices.Read(stmt));
    services.push_back(std::move(service));
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
  BindValue(stmt, 2, replicas);  // NULL for none, as the column stores it
  return RunOnOne(stmt, name);
}

}  // namespace gpuscale::store
