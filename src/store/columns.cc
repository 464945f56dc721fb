// Value conversions behind Table (columns.h): one SQLite representation per member type.
#include "store/columns.h"

#include <fmt/format.h>

#include "store/json_columns.h"

namespace gpuscale::store {
namespace {

// "replicas.gpus": how json_columns.h errors name a column.
std::string QualifiedName(const ColumnAt& at) { return fmt::format("{}.{}", at.table, at.name); }

template <typename T>
void BindOptional(Statement& stmt, int index, const std::optional<T>& value) {
  if (value) {
    BindValue(stmt, index, *value);
  } else {
    stmt.BindNull(index);
  }
}

template <typename T>
Status ReadOptional(const ColumnAt& at, std::optional<T>& value) {
  if (at.stmt.ColumnIsNull(at.index)) {
    value.reset();
    return OkStatus();
  }
  return ReadValue(at, value.emplace());
}

}  // namespace

void BindValue(Statement& stmt, int index, const std::string& value) { stmt.Bind(index, value); }
void BindValue(Statement& stmt, int index, bool value) { stmt.Bind(index, int64_t{value ? 1 : 0}); }
void BindValue(Statement& stmt, int index, int value) { stmt.Bind(index, int64_t{value}); }
void BindValue(Statement& stmt, int index, int64_t value) { stmt.Bind(index, value); }
void BindValue(Statement& stmt, int index, double value) { stmt.Bind(index, value); }
void BindValue(Statement& stmt, int index, Seconds value) { stmt.Bind(index, value.count()); }
void BindValue(Statement& stmt, int index, const std::optional<int>& value) {
  BindOptional(stmt, index, value);
}
void BindValue(Statement& stmt, int index, const std::optional<int64_t>& value) {
  BindOptional(stmt, index, value);
}
void BindValue(Statement& stmt, int index, const std::optional<Seconds>& value) {
  BindOptional(stmt, index, value);
}
void BindValue(Statement& stmt, int index, const std::vector<int>& value) {
  stmt.Bind(index, IntsToJson(value));
}
void BindValue(Statement& stmt, int index, const std::vector<std::string>& value) {
  stmt.Bind(index, StringsToJson(value));
}

Status ReadValue(const ColumnAt& at, std::string& value) {
  value = at.stmt.ColumnText(at.index);
  return OkStatus();
}
Status ReadValue(const ColumnAt& at, bool& value) {
  value = at.stmt.ColumnInt64(at.index) != 0;
  return OkStatus();
}
Status ReadValue(const ColumnAt& at, int& value) {
  value = static_cast<int>(at.stmt.ColumnInt64(at.index));
  return OkStatus();
}
Status ReadValue(const ColumnAt& at, int64_t& value) {
  value = at.stmt.ColumnInt64(at.index);
  return OkStatus();
}
Status ReadValue(const ColumnAt& at, double& value) {
  value = at.stmt.ColumnDouble(at.index);
  return OkStatus();
}
Status ReadValue(const ColumnAt& at, Seconds& value) {
  value = Seconds{at.stmt.ColumnDouble(at.index)};
  return OkStatus();
}
Status ReadValue(const ColumnAt& at, std::optional<int>& value) { return ReadOptional(at, value); }
Status ReadValue(const ColumnAt& at, std::optional<int64_t>& value) {
  return ReadOptional(at, value);
}
Status ReadValue(const ColumnAt& at, std::optional<Seconds>& value) {
  return ReadOptional(at, value);
}
Status ReadValue(const ColumnAt& at, std::vector<int>& value) {
  GS_ASSIGN_OR_RETURN(value, IntsFromJson(at.stmt.ColumnText(at.index), QualifiedName(at)));
  return OkStatus();
}
Status ReadValue(const ColumnAt& at, std::vector<std::string>& value) {
  GS_ASSIGN_OR_RETURN(value, StringsFromJson(at.stmt.ColumnText(at.index), QualifiedName(at)));
  return OkStatus();
}

}  // namespace gpuscale::store
