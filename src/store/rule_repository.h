// Rules table: scaling rules of services (rules policy family), with generated ids. A rule
// belongs to an existing service and is deleted with it.
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

class RuleRepository {
 public:
  explicit RuleRepository(Database& db) : db_(db) {}

  // Inserts `rule` (its id is ignored) and returns the new id. Errors: kInvalidArgument for
  // an empty service/name/metric/comparator (field names it); kFailedPrecondition when the
  // service does not exist or it already has a rule of that name.
  Result<int64_t> Add(const RuleRow& rule);
  // Replaces every field of rule `rule.id` but created_at. Errors: as Add; kNotFound.
  Status Update(const RuleRow& rule);
  // Errors: kNotFound.
  Result<RuleRow> Get(int64_t id);
  // The service's rules in id order (empty for an unknown service).
  Result<std::vector<RuleRow>> ListForService(std::string_view service);
  // Errors: kNotFound.
  Status Delete(int64_t id);

 private:
  Database& db_;
};

}  // namespace gpuscale::store
