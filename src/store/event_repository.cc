#include "store/event_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/history_rows.h"
#include "store/tables.h"

namespace gpuscale::store {

Result<int64_t> EventRepository::Append(const EventRow& event) {
  if (event.kind.empty()) return InvalidArgument("expected an event kind", "kind");
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kEvents.Insert()));
  kEvents.BindInsert(stmt, event);
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.LastInsertRowId();
}

Result<std::vector<EventRow>> EventRepository::Query(const EventQuery& query) {
  if (query.limit < 1 || query.limit > 10000) {
    return InvalidArgument(fmt::format("limit must be 1..10000, got {}", query.limit), "limit");
  }
  if (query.since_id < 0) {
    return InvalidArgument(fmt::format("since_id must be >= 0, got {}", query.since_id),
                           "since_id");
  }
  std::lock_guard<std::mutex> lock(db_.mu());
  // "?2 = '' OR service = ?2" keeps one prepared statement for every filter combination.
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare(kEvents.Select() +
                  " WHERE id > ?1 AND (?2 = '' OR service = ?2) AND (?3 = '' OR kind = ?3) "
                  "ORDER BY id LIMIT ?4"));
  stmt.Bind(1, query.since_id)
      .Bind(2, query.service)
      .Bind(3, query.kind)
      .Bind(4, int64_t{query.limit});
  std::vector<EventRow> events;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return events;
    GS_ASSIGN_OR_RETURN(EventRow event, kEvents.Read(stmt));
    events.push_back(std::move(event));
  }
}

Result<int64_t> EventRepository::LatestId() {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare("SELECT coalesce(max(id), 0) FROM events"));
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.ColumnInt64(0) : 0;
}

Result<int64_t> EventRepository::DeleteBefore(Seconds before, int64_t limit) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return DeleteOldestBefore(db_, kEvents.name(), before, limit);
}

Result<std::optional<Seconds>> EventRepository::OldestAt() {
  std::lock_guard<std::mutex> lock(db_.mu());
  return store::OldestAt(db_, kEvents.name());
}

}  // namespace gpuscale::store
