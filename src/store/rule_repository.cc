#include "store/rule_repository.h"

#include <fmt/format.h>

#include <mutex>

namespace gpuscale::store {
namespace {

constexpr std::string_view kColumns =
    "id, service, name, source, metric, aggregation, comparator, threshold, step_size, "
    "cooldown_seconds, min_replicas, max_replicas, enabled, created_at";

Status Validate(const RuleRow& rule) {
  if (rule.service.empty()) return InvalidArgument("expected the rule's service", "service");
  if (rule.name.empty()) return InvalidArgument("expected a non-empty rule name", "name");
  if (rule.metric.empty()) return InvalidArgument("expected a metric name", "metric");
  if (rule.comparator.empty()) {
    return InvalidArgument("expected a comparator such as GREATER_THAN", "comparator");
  }
  return OkStatus();
}

// Binds ?2..?13 (every column but id and created_at) in kColumns order.
void BindFields(Statement& stmt, const RuleRow& rule) {
  stmt.Bind(2, rule.service)
      .Bind(3, rule.name)
      .Bind(4, rule.source)
      .Bind(5, rule.metric)
      .Bind(6, rule.aggregation)
      .Bind(7, rule.comparator)
      .Bind(8, rule.threshold)
      .Bind(9, int64_t{rule.step_size})
      .Bind(10, rule.cooldown.count())
      .Bind(11, int64_t{rule.min_replicas})
      .Bind(12, int64_t{rule.max_replicas})
      .Bind(13, int64_t{rule.enabled ? 1 : 0});
}

RuleRow ReadRow(const Statement& stmt) {
  RuleRow rule;
  rule.id = stmt.ColumnInt64(0);
  rule.service = stmt.ColumnText(1);
  rule.name = stmt.ColumnText(2);
  rule.source = stmt.ColumnText(3);
  rule.metric = stmt.ColumnText(4);
  rule.aggregation = stmt.ColumnText(5);
  rule.comparator = stmt.ColumnText(6);
  rule.threshold = stmt.ColumnDouble(7);
  rule.step_size = static_cast<int>(stmt.ColumnInt64(8));
  rule.cooldown = Seconds{stmt.ColumnDouble(9)};
  rule.min_replicas = static_cast<int>(stmt.ColumnInt64(10));
  rule.max_replicas = static_cast<int>(stmt.ColumnInt64(11));
  rule.enabled = stmt.ColumnInt64(12) != 0;
  rule.created_at = Seconds{stmt.ColumnDouble(13)};
  return rule;
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
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("INSERT INTO rules ({}) VALUES (NULL, ?2, ?3, ?4, "
                                              "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                                              kColumns)));
  BindFields(stmt, rule);
  stmt.Bind(14, rule.created_at.count());
  Status run = stmt.Run();
  if (!run) return Explain(run.error(), rule);
  return db_.LastInsertRowId();
}

Status RuleRepository::Update(const RuleRow& rule) {
  GS_RETURN_IF_ERROR(Validate(rule));
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare("UPDATE rules SET service = ?2, name = ?3, source = ?4, metric = ?5, "
                  "aggregation = ?6, comparator = ?7, threshold = ?8, step_size = ?9, "
                  "cooldown_seconds = ?10, min_replicas = ?11, max_replicas = ?12, "
                  "enabled = ?13 WHERE id = ?1"));
  stmt.Bind(1, rule.id);
  BindFields(stmt, rule);
  Status run = stmt.Run();
  if (!run) return Explain(run.error(), rule);
  if (db_.Changes() == 0) return NotFound(fmt::format("no rule with id {}", rule.id), "id");
  return OkStatus();
}

Result<RuleRow> RuleRepository::Get(int64_t id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("SELECT {} FROM rules WHERE id = ?1", kColumns)));
  stmt.Bind(1, id);
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NotFound(fmt::format("no rule with id {}", id), "id");
  return ReadRow(stmt);
}

Result<std::vector<RuleRow>> RuleRepository::ListForService(std::string_view service) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare(fmt::format("SELECT {} FROM rules WHERE service = ?1 ORDER BY id", kColumns)));
  stmt.Bind(1, service);
  std::vector<RuleRow> rules;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return rules;
    rules.push_back(ReadRow(stmt));
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
