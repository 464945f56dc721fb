#include "store/decision_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/history_rows.h"
#include "store/tables.h"

namespace gpuscale::store {

Result<int64_t> DecisionRepository::Append(const DecisionRow& decision) {
  if (decision.service.empty()) {
    return InvalidArgument("expected the decision's service", "service");
  }
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kDecisions.Insert()));
  kDecisions.BindInsert(stmt, decision);
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.LastInsertRowId();
}

Result<std::vector<DecisionRow>> DecisionRepository::Recent(std::string_view service, int limit) {
  if (limit < 1 || limit > 10000) {
    return InvalidArgument(fmt::format("limit must be 1..10000, got {}", limit), "limit");
  }
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kDecisions.Select() +
                                                  " WHERE service = ?1 ORDER BY id DESC LIMIT ?2"));
  stmt.Bind(1, service).Bind(2, int64_t{limit});
  std::vector<DecisionRow> decisions;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return decisions;
    GS_ASSIGN_OR_RETURN(DecisionRow decision, kDecisions.Read(stmt));
    decisions.push_back(std::move(decision));
  }
}

Result<int64_t> DecisionRepository::DeleteBefore(Seconds before, int64_t limit) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return DeleteOldestBefore(db_, kDecisions.name(), before, limit);
}

Result<std::optional<Seconds>> DecisionRepository::OldestAt() {
  std::lock_guard<std::mutex> lock(db_.mu());
  return store::OldestAt(db_, kDecisions.name());
}

}  // namespace gpuscale::store
