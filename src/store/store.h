// Store: gpuscale's state in one SQLite database (WAL mode): services, scaling rules,
// replicas, GPU leases, decisions, events, tasks and experiments, each behind a small
// repository. Opening the store creates the directory and the file as needed and applies
// pending schema migrations (migrations.h), so `Store::Open(state_dir / "gpuscale.db")` is
// all the daemon does.
//
// Ownership: owns the Database and the repositories; repository references stay valid for
// the Store's lifetime.
// Thread-safety: repositories may be used from several threads (see sqlite_db.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "store/decision_repository.h"
#include "store/event_repository.h"
#include "store/lease_repository.h"
#include "store/replica_repository.h"
#include "store/rule_repository.h"
#include "store/service_repository.h"
#include "store/sqlite_db.h"
#include "store/task_repository.h"

namespace gpuscale::store {

class Store {
 public:
  // Opens or creates the database at `path` (":memory:" for a private in-memory one) and
  // migrates it to the current schema; `now` stamps applied migrations. Errors: those of
  // Database::Open and ApplyMigrations (e.g. kFailedPrecondition for a database written by a
  // newer gpuscale).
  static Result<std::unique_ptr<Store>> Open(const std::filesystem::path& path, Seconds now,
                                             const OpenOptions& options = {});

  ServiceRepository& services() { return services_; }
  RuleRepository& rules() { return rules_; }
  ReplicaRepository& replicas() { return replicas_; }
  LeaseRepository& leases() { return leases_; }
  DecisionRepository& decisions() { return decisions_; }
  EventRepository& events() { return events_; }
  TaskRepository& tasks() { return tasks_; }
  Database& database() { return *db_; }
  // Bytes in the database's pages that hold data: its pages less the free ones. Deleted rows'
  // pages are reused by later writes, so the file stops growing once this stays under a cap
  // (no VACUUM needed). Errors: those of Statement::Step.
  Result<int64_t> UsedBytes();
  // Whether the database takes a write now: one transaction inserts a 16 KiB row into the
  // write_probe table and deletes it (committed, so its pages reach the WAL as any write's
  // do; the table stays empty). Errors: those of Statement::Step (kUnavailable on a full
  // disk or past OpenOptions::max_bytes).
  Status ProbeWrite();
  int schema_version() const { return schema_version_; }

 private:
  Store(std::unique_ptr<Database> db, int schema_version);

  std::unique_ptr<Database> db_;
  int schema_version_;
  ServiceRepository services_;
  RuleRepository rules_;
  ReplicaRepository replicas_;
  LeaseRepository leases_;
  DecisionRepository decisions_;
  EventRepository events_;
  TaskRepository tasks_;
};

}  // namespace gpuscale::store
