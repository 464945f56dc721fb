// Decisions table: one row per controller tick and service (what the policy decided and
// why), for the API's decision history.
//
// Ownership: borrows the Database. Thread-safety: every method holds the Database's mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

class DecisionRepository {
 public:
  explicit DecisionRepository(Database& db) : db_(db) {}

  // Appends `decision` (its id is ignored); returns the new id. Errors: kInvalidArgument
  // for an empty service.
  Result<int64_t> Append(const DecisionRow& decision);
  // The service's newest `limit` decisions, newest first. Errors: kInvalidArgument when
  // limit is not 1..10000.
  Result<std::vector<DecisionRow>> Recent(std::string_view service, int limit);
  // Deletes, among the `limit` oldest decisions (by id), those older than `before`; returns
  // how many (retention: call again while it returns `limit`).
  Result<int64_t> DeleteBefore(Seconds before, int64_t limit);
  // `at` of the oldest decision; nullopt when there is none.
  Result<std::optional<Seconds>> OldestAt();

 private:
  Database& db_;
};

}  // namespace gpuscale::store
