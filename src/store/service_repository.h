// Services table: the services the daemon manages, keyed by name.
//
// Ownership: borrows the Database (owned by Store). Thread-safety: every method holds the
// Database's mutex for its whole operation, so it may be called from any thread.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

class ServiceRepository {
 public:
  explicit ServiceRepository(Database& db) : db_(db) {}

  // Inserts, or updates spec/paused/updated_at of an existing service (created_at is kept
  // from the first Put). Errors: kInvalidArgument when the name is empty.
  Status Put(const ServiceRow& service);
  // Errors: kNotFound naming the service.
  Result<ServiceRow> Get(std::string_view name);
  // Every service, by name.
  Result<std::vector<ServiceRow>> List();
  // Deletes the service and (cascade) its rules. Errors: kNotFound.
  Status Delete(std::string_view name);

 private:
  Database& db_;
};

}  // namespace gpuscale::store
