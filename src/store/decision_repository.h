// Decisions table: one row per controller tick and service (what the policy decided and
// why), for the API's decision history.
//
// Ownership: borrows the Database. Thread-safety: every method holds the Database's mutex.
#pragma once

#include <cstdint>
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
  // Deletes decisions older than `before`; returns how many (retention).
  Result<int64_t> DeleteBefore(Seconds before);

 private:
  Database& db_;
};

}  // namespace gpuscale::store
