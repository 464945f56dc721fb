#include "store/history_rows.h"

#include <fmt/format.h>

namespace gpuscale::store {

Result<std::optional<Seconds>> OldestAt(Database& db, std::string_view table) {
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db.Prepare(fmt::format("SELECT at FROM {} ORDER BY id LIMIT 1", table)));
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<Seconds>();
  return std::optional<Seconds>(Seconds{stmt.ColumnDouble(0)});
}

Result<int64_t> DeleteOldestBefore(Database& db, std::string_view table, Seconds before,
                                   int64_t limit) {
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare(fmt::format(
          "DELETE FROM {0} WHERE id IN (SELECT id FROM {0} ORDER BY id LIMIT ?1) AND at < ?2",
          table)));
  stmt.Bind(1, limit).Bind(2, before.count());
  GS_RETURN_IF_ERROR(stmt.Run());
  return db.Changes();
}

}  // namespace gpuscale::store
