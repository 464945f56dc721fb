#include "store/decision_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/json_columns.h"

namespace gpuscale::store {

Result<int64_t> DecisionRepository::Append(const DecisionRow& decision) {
  if (decision.service.empty()) {
    return InvalidArgument("expected the decision's service", "service");
  }
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare("INSERT INTO decisions (service, at, policy, current_replicas, ready_replicas, "
                  "desired_replicas, reason, details, actions) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                  "?7, ?8, ?9)"));
  stmt.Bind(1, decision.service)
      .Bind(2, decision.at.count())
      .Bind(3, decision.policy)
      .Bind(4, int64_t{decision.current_replicas})
      .Bind(5, int64_t{decision.ready_replicas})
      .Bind(6, int64_t{decision.desired_replicas})
      .Bind(7, decision.reason)
      .Bind(8, StringsToJson(decision.details))
      .Bind(9, StringsToJson(decision.actions));
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.LastInsertRowId();
}

Result<std::vector<DecisionRow>> DecisionRepository::Recent(std::string_view service, int limit) {
  if (limit < 1 || limit > 10000) {
    return InvalidArgument(fmt::format("limit must be 1..10000, got {}", limit), "limit");
  }
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare("SELECT id, service, at, policy, current_replicas, ready_replicas, "
                  "desired_replicas, reason, details, actions FROM decisions WHERE service = ?1 "
                  "ORDER BY id DESC LIMIT ?2"));
  stmt.Bind(1, service).Bind(2, int64_t{limit});
  std::vector<DecisionRow> decisions;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return decisions;
    DecisionRow d;
    d.id = stmt.ColumnInt64(0);
    d.service = stmt.ColumnText(1);
    d.at = Seconds{stmt.ColumnDouble(2)};
    d.policy = stmt.ColumnText(3);
    d.current_replicas = static_cast<int>(stmt.ColumnInt64(4));
    d.ready_replicas = static_cast<int>(stmt.ColumnInt64(5));
    d.desired_replicas = static_cast<int>(stmt.ColumnInt64(6));
    d.reason = stmt.ColumnText(7);
    GS_ASSIGN_OR_RETURN(d.details, StringsFromJson(stmt.ColumnText(8), "decisions.details"));
    GS_ASSIGN_OR_RETURN(d.actions, StringsFromJson(stmt.ColumnText(9), "decisions.actions"));
    decisions.push_back(std::move(d));
  }
}

Result<int64_t> DecisionRepository::DeleteBefore(Seconds before) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("DELETE FROM decisions WHERE at < ?1"));
  stmt.Bind(1, before.count());
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.Changes();
}

}  // namespace gpuscale::store
