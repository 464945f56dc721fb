// Versioned schema migrations. The schema is an ordered list of migrations (version 1, 2, ...);
// the `schema_version` table records which have been applied (version, name, applied_at).
// Opening a database applies every pending migration, each in its own transaction (a failed
// migration leaves the database at the previous version), so opening twice is a no-op and an
// old database is upgraded in place. A database newer than this binary is refused rather
// than guessed at.
//
// Thread-safety: the caller serializes access to the Database (holds its mu()).
#pragma once

#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

struct Migration {
  int version = 0;        // 1, 2, ... without gaps
  std::string_view name;  // e.g. "initial schema"
  std::string_view sql;   // DDL script (no parameters)
};

// gpuscale's schema, oldest first.
const std::vector<Migration>& SchemaMigrations();

// The highest applied version; 0 for a database without a schema_version table.
Result<int> SchemaVersion(Database& db);

// Applies the migrations of `migrations` newer than SchemaVersion(db), in order, stamping
// `now`; returns the version reached. Errors: kInternal when the list is not 1, 2, ... in
// order; kFailedPrecondition when the database is newer than the list (upgrade gpuscale or
// use another state directory); a failing migration's error, naming its version.
Result<int> ApplyMigrations(Database& db, const std::vector<Migration>& migrations, Seconds now);

}  // namespace gpuscale::store
