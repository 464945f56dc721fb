// Internal to store/: how one row struct (records.h) maps to its table, written once as an
// array of columns, each naming its SQL column and the row member it holds. Everything a
// repository used to write by hand for every column (the column list of SELECT and INSERT,
// the `?N` placeholders, the UPDATE assignments, the binds and the reads) is derived from
// that array, so adding or reordering a column is one edit and they cannot disagree.
//
//   constexpr Column<LeaseRow> kLeaseColumns[] = {
//       {"key", &LeaseRow::key, Written::kOnInsert}, {"gpu_index", &LeaseRow::gpu_index}, ...};
//   constexpr Table<LeaseRow> kLeases{"leases", kLeaseColumns};
//   db.Prepare(kLeases.Insert("INSERT OR REPLACE")) ... kLeases.BindInsert(stmt, lease);
//
// Numbering: column i (0-based in the array) is always result column i of Select() and
// parameter ?i+1 of every statement that binds row values, whichever subset of columns that
// statement writes; so an UPDATE's `WHERE key = ?1` reuses the key's own parameter.
//
// Thread-safety: a Table is an immutable constexpr value; its functions are pure (binds and
// reads touch only the Statement they are given).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

// The member types a column can hold, each with one SQLite representation: TEXT for
// strings; INTEGER for bool (0/1), int and int64_t; REAL for double and Seconds; NULL for an
// empty optional; a JSON array in a TEXT column for vectors (json_columns.h).
template <typename Row>
using FieldPtr = std::variant<std::string Row::*, bool Row::*, int Row::*, int64_t Row::*,
                              double Row::*, Seconds Row::*, std::optional<int> Row::*,
                              std::optional<int64_t> Row::*, std::optional<Seconds> Row::*,
                              std::vector<int> Row::*, std::vector<std::string> Row::*>;

// Which statements write a column (every column is read).
enum class Written {
  kAlways,    // inserts and updates
  kOnInsert,  // inserts only: a key the caller chooses, a creation time, a parent's id
  kNever,     // assigned by SQLite (INTEGER PRIMARY KEY AUTOINCREMENT): read back only
};

template <typename Row>
struct Column {
  std::string_view name;  // the SQL column, e.g. "cooldown_seconds"
  FieldPtr<Row> field;    // the row member it holds, e.g. &RuleRow::cooldown
  Written written = Written::kAlways;
};

// One result column of the current row, named for error messages ("replicas.gpus").
struct ColumnAt {
  const Statement& stmt;
  int index;  // 0-based, as Statement::Column* take it
  std::string_view table;
  std::string_view name;
};

// The conversions for each FieldPtr type (columns.cc). Only JSON columns can fail to read:
// kInternal naming `table.name` when the text is not a JSON array of the right type.
void BindValue(Statement& stmt, int index, const std::string& value);
void BindValue(Statement& stmt, int index, bool value);
void BindValue(Statement& stmt, int index, int value);
void BindValue(Statement& stmt, int index, int64_t value);
void BindValue(Statement& stmt, int index, double value);
void BindValue(Statement& stmt, int index, Seconds value);
void BindValue(Statement& stmt, int index, const std::optional<int>& value);
void BindValue(Statement& stmt, int index, const std::optional<int64_t>& value);
void BindValue(Statement& stmt, int index, const std::optional<Seconds>& value);
void BindValue(Statement& stmt, int index, const std::vector<int>& value);
void BindValue(Statement& stmt, int index, const std::vector<std::string>& value);
Status ReadValue(const ColumnAt& at, std::string& value);
Status ReadValue(const ColumnAt& at, bool& value);
Status ReadValue(const ColumnAt& at, int& value);
Status ReadValue(const ColumnAt& at, int64_t& value);
Status ReadValue(const ColumnAt& at, double& value);
Status ReadValue(const ColumnAt& at, Seconds& value);
Status ReadValue(const ColumnAt& at, std::optional<int>& value);
Status ReadValue(const ColumnAt& at, std::optional<int64_t>& value);
Status ReadValue(const ColumnAt& at, std::optional<Seconds>& value);
Status ReadValue(const ColumnAt& at, std::vector<int>& value);
Status ReadValue(const ColumnAt& at, std::vector<std::string>& value);

// A table and the columns its row struct maps, in the order Select() returns them.
// REQUIRES: columns[0] is the primary key and is not Written::kAlways; `columns` outlives
// the Table (declare both constexpr at namespace scope).
template <typename Row>
class Table {
 public:
  constexpr Table(std::string_view name, std::span<const Column<Row>> columns)
      : name_(name), columns_(columns) {}

  std::string_view name() const { return name_; }
  std::span<const Column<Row>> columns() const { return columns_; }

  // "SELECT id, service, ... FROM replicas": every column; append WHERE/ORDER BY clauses,
  // whose parameters start at ?1 (no row values are bound to a SELECT).
  std::string Select() const { return "SELECT " + Names(kAll) + " FROM " + std::string(name_); }

  // "<verb> INTO rules (service, ...) VALUES (?2, ...)": the columns an insert writes
  // (all but Written::kNever). `verb` is e.g. "INSERT" or "INSERT OR REPLACE".
  std::string Insert(std::string_view verb = "INSERT") const {
    return std::string(verb) + " INTO " + std::string(name_) + " (" + Names(kInserted) +
           ") VALUES (" + Placeholders(kInserted) + ")";
  }

  // "service = ?2, name = ?3, ...": the columns an update writes (Written::kAlways), for
  // UPDATE ... SET and upserts (ON CONFLICT DO UPDATE SET).
  std::string Assignments() const {
    return Join(kUpdated,
                [&](size_t i) { return std::string(columns_[i].name) + " = " + Placeholder(i); });
  }

  // "UPDATE rules SET <Assignments()> WHERE id = ?1", the key being columns[0].
  std::string Update() const {
    return "UPDATE " + std::string(name_) + " SET " + Assignments() + " WHERE " +
           std::string(columns_[0].name) + " = ?1";
  }

  // Binds what Insert() writes, which covers an upsert's Assignments() too.
  void BindInsert(Statement& stmt, const Row& row) const { BindEach(kInserted, stmt, row); }
  // Binds what Update() writes and the key its WHERE names.
  void BindUpdate(Statement& stmt, const Row& row) const {
    BindColumn(0, stmt, row);
    BindEach(kUpdated, stmt, row);
  }

  // The row at the statement's current step of a Select(). Errors: those of ReadValue.
  Result<Row> Read(const Statement& stmt) const {
    Row row;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const ColumnAt at{stmt, static_cast<int>(i), name_, columns_[i].name};
      GS_RETURN_IF_ERROR(std::visit(
          [&](auto member) -> Status { return ReadValue(at, row.*member); }, columns_[i].field));
    }
    return row;
  }

 private:
  // Which columns a statement covers.
  enum Subset { kAll, kInserted, kUpdated };

  bool In(Subset subset, size_t i) const {
    const Written written = columns_[i].written;
    if (subset == kInserted) return written != Written::kNever;
    if (subset == kUpdated) return written == Written::kAlways;
    return true;
  }
  template <typename F>
  void ForEach(Subset subset, F&& f) const {
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (In(subset, i)) f(i);
    }
  }
  static std::string Placeholder(size_t i) { return "?" + std::to_string(i + 1); }

  // "a, b, c" of each covered column's text(i).
  template <typename Text>
  std::string Join(Subset subset, Text&& text) const {
    std::string out;
    ForEach(subset, [&](size_t i) {
      if (!out.empty()) out += ", ";
      out += text(i);
    });
    return out;
  }
  std::string Names(Subset subset) const {
    return Join(subset, [&](size_t i) { return std::string(columns_[i].name); });
  }
  std::string Placeholders(Subset subset) const { return Join(subset, Placeholder); }

  void BindColumn(size_t i, Statement& stmt, const Row& row) const {
    std::visit([&](auto member) { BindValue(stmt, static_cast<int>(i) + 1, row.*member); },
               columns_[i].field);
  }
  void BindEach(Subset subset, Statement& stmt, const Row& row) const {
    ForEach(subset, [&](size_t i) { BindColumn(i, stmt, row); });
  }

  std::string_view name_;
  std::span<const Column<Row>> columns_;
};

}  // namespace gpuscale::store
