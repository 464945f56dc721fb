// Events table: an append-only log of what happened (decisions, replica starts, crashes,
// adoptions...). Ids increase strictly, so a reader (the API's SSE stream) resumes with
// "events since id N".
//
// Ownership: borrows the Database. Thread-safety: every method holds the Database's mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

class EventRepository {
 public:
  explicit EventRepository(Database& db) : db_(db) {}

  // Appends `event` (its id is ignored); returns the new id. Errors: kInvalidArgument for
  // an empty kind.
  Result<int64_t> Append(const EventRow& event);
  // Events with id > query.since_id matching service and kind (when non-empty), oldest
  // first, at most query.limit. Errors: kInvalidArgument when limit is not 1..10000 or
  // since_id < 0.
  Result<std::vector<EventRow>> Query(const EventQuery& query);
  // Id of the newest event; 0 when there is none.
  Result<int64_t> LatestId();
  // Deletes, among the `limit` oldest events (by id), those older than `before`; returns
  // how many (retention: call again while it returns `limit`).
  Result<int64_t> DeleteBefore(Seconds before, int64_t limit);
  // `at` of the oldest event; nullopt when there is none.
  Result<std::optional<Seconds>> OldestAt();

 private:
  Database& db_;
};

}  // namespace gpuscale::store
