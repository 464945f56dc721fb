// Replicas table: what the orchestrators last persisted about each replica (pid, port, GPUs,
// lease owner, command line), which is what lets a restarted daemon adopt live replicas.
//
// Ownership: borrows the Database. Thread-safety: every method holds the Database's mutex.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

class ReplicaRepository {
 public:
  explicit ReplicaRepository(Database& db) : db_(db) {}

  // Inserts or replaces the replica with `replica.id`. Errors: kInvalidArgument for an empty
  // id or service.
  Status Put(const ReplicaRow& replica);
  // Makes the stored replicas of `service` exactly `replicas` (upserts them, deletes the
  // others of that service) in one transaction: the daemon's per-tick snapshot.
  // Errors: as Put; kInvalidArgument when a replica belongs to another service.
  Status ReplaceForService(std::string_view service, const std::vector<ReplicaRow>& replicas);
  // Errors: kNotFound.
  Result<ReplicaRow> Get(std::string_view id);
  // Every replica, or the service's, ordered by service then id.
  Result<std::vector<ReplicaRow>> List();
  Result<std::vector<ReplicaRow>> ListForService(std::string_view service);
  // Errors: kNotFound.
  Status Delete(std::string_view id);
  // Deletes every row (a table whose rows cannot be read is rebuilt from the replica
  // processes: daemon/replica_processes.h).
  Status DeleteAll();

 private:
  Status PutLocked(const ReplicaRow& replica);
  Result<std::vector<ReplicaRow>> Select(std::string_view where, std::string_view arg);

  Database& db_;
};

}  // namespace gpuscale::store
