// Services table: the services the daemon manages, keyed by name. A deleted service whose
// replicas may still run keeps its row, marked `deleting`, until the daemon has stopped them
// (FinishDeleting): the spec says which engine runs them, which a restarted daemon needs to
// stop them (a Slurm job is cancelled through Slurm, not killed as a local process).
//
// Ownership: borrows the Database (owned by Store). Thread-safety: every method holds the
// Database's mutex for its whole operation, so it may be called from any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

class ServiceRepository {
 public:
  explicit ServiceRepository(Database& db) : db_(db) {}

  // Inserts, or overwrites every field but created_at of an existing service (created_at is
  // kept from the first Put), `deleting` and `manual_replicas` included: a Put over a row
  // marked deleting revives it. Errors: kInvalidArgument when the name is empty.
  Status Put(const ServiceRow& service);
  // Errors: kNotFound naming the service.
  Result<ServiceRow> Get(std::string_view name);
  // Every service, by name, rows marked deleting included.
  Result<std::vector<ServiceRow>> List();
  // Deletes the service and (cascade) its rules at once. Errors: kNotFound.
  Status Delete(std::string_view name);

  // Deletion while replicas may still run: marks the row deleting, clears its manual
  // override and deletes its rules (a service re-created under the name starts without
  // them). Errors: kNotFound.
  Status MarkDeleting(std::string_view name);
  // The replicas are gone: deletes the row if it is still marked deleting (a Put since then
  // re-created the service, whose row stays). No row is not an error.
  Status FinishDeleting(std::string_view name);
  // Stores the manual override of the desired count; nullopt clears it. Errors: kNotFound.
  Status SetManualReplicas(std::string_view name, std::optional<int> replicas);

 private:
  // Runs `stmt` (bound by the caller) and reports kNotFound when it changed no row.
  Status RunOnOne(Statement& stmt, std::string_view name);

  Database& db_;
};

}  // namespace gpuscale::store
