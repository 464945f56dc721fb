// Leases table: the GPU lease ledger as persisted (alloc::LeaseLedger is the live copy; the
// daemon writes a snapshot of it so that `gpuscale` tools and a restarted daemon can see who
// held which GPU).
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

class LeaseRepository {
 public:
  explicit LeaseRepository(Database& db) : db_(db) {}

  // Inserts or replaces the lease of `lease.key`. Errors: kInvalidArgument for an empty key
  // or owner.
  Status Put(const LeaseRow& lease);
  // Makes the table exactly `leases`, in one transaction. Errors: as Put.
  Status ReplaceAll(const std::vector<LeaseRow>& leases);
  // Errors: kNotFound.
  Status Delete(std::string_view key);
  // Deletes every lease of `owner`; returns how many.
  Result<int64_t> DeleteOwner(std::string_view owner);
  // All leases, or an owner's, ordered by key.
  Result<std::vector<LeaseRow>> List();
  Result<std::vector<LeaseRow>> ListForOwner(std::string_view owner);

 private:
  Status PutLocked(const LeaseRow& lease);
  Result<std::vector<LeaseRow>> Select(std::string_view where, std::string_view arg);

  Database& db_;
};

}  // namespace gpuscale::store
