#include "store/rule_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/tables.h"

namespace gpuscale::store {
namespace {

Status Validate(const RuleRow& rule) {
  if (rule.service.empty()) return InvalidArgument("expected the rule's service", "service");
  if (rule.name.empty()) return InvalidArgument("expected a non-empty rule name", "name");
  if (rule.metric.empty()) return InvalidArgument("expected a metric name", "metric");
  if (rule.comparator.empty()) {
    return InvalidArgument("expected a comparator such as GREATER_THAN", "comparator");
  }
  return OkStatus();
}

// Constraint failures come back as kFailedPrecondition with SQLite's wording; say what the
// user can do about them.
Unexpected<Error> Explain(const Error& error, const RuleRow& rule) {
  if (error.code != ErrorCode::kFailedPrecondition) return Unexpected<Error>(error);
  if (error.message.find("FOREIGN KEY") != std::string::npos) {
    return FailedPrecondition(
        fmt::format("service '{}' does not exist; create it before adding rules", rule.service),
        "service");
  }
  return FailedPrecondition(
      fmt::format("service '{}' already has a rule named '{}'", rule.service, rule.name), "name");
}

}  // namespace

Result<int64_t> RuleRepository::Add(const RuleRow& rule) {
  GS_RETURN_IF_ERROR(Validate(rule));
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kRules.Insert()));
  kRules.BindInsert(stmt, rule);
  Status run = stmt.Run();
  if (!run) return Explain(run.error(), rule);
  return db_.LastInsertRowId();
}

Status RuleRepository::Update(const RuleRow& rule) {
  GS_RETURN_IF_ERROR(Validate(rule));
  std::lock_guard<std::mutex> lock(db_.mu());
  // Every column but id and created_at (kept from Add).
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kRules.Update()));
  kRules.BindUpdate(stmt, rule);
  Status run = stmt.Run();
  if (!run) return Explain(run.error(), rule);
  if (db_.Changes() == 0) return NotFound(fmt::format("no rule with id {}", rule.id), "id");
  return OkStatus();
}

Result<RuleRow> RuleRepository::Get(int64_t id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kRules.Select() + " WHERE id = ?1"));
  stmt.Bind(1, id);
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NotFound(fmt::format("no rule with id {}", id), "id");
  return kRules.Read(stmt);
}

Result<std::vector<RuleRow>> RuleRepository::ListForService(std::string_view service) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(kRules.Select() + " WHERE service = ?1 ORDER BY id"));
  stmt.Bind(1, service);
  std::vector<RuleRow> rules;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return rules;
    GS_ASSIGN_OR_RETURN(RuleRow rule, kRules.Read(stmt));
    rules.push_back(std::move(rule));
  }
}

Status RuleRepository::Delete(int64_t id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("DELETE FROM rules WHERE id = ?1"));
  stmt.Bind(1, id);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) return NotFound(fmt::format("no rule with id {}", id), "id");
  return OkStatus();
}

}  // namespace gpuscale::store
