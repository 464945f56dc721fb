#include "store/store.h"

#include <fmt/format.h>

#include <algorithm>

#include <mutex>

#include "store/migrations.h"

namespace gpuscale::store {

Result<std::unique_ptr<Store>> Store::Open(const std::filesystem::path& path, Seconds now,
                                           const OpenOptions& options) {
  GS_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options));
  int version = 0;
  {
    std::lock_guard<std::mutex> lock(db->mu());
    GS_ASSIGN_OR_RETURN(version, ApplyMigrations(*db, SchemaMigrations(), now));
    if (options.max_bytes > 0) {
      // Pages of 4 KiB (SQLite's default); a cap below the current size holds it there.
      GS_RETURN_IF_ERROR(db->Exec(
          fmt::format("PRAGMA max_page_count = {};", std::max<int64_t>(1, options.max_bytes / 4096))));
    }
  }
  return std::unique_ptr<Store>(new Store(std::move(db), version));
}

Result<int64_t> Store::UsedBytes() {
  std::lock_guard<std::mutex> lock(db_->mu());
  // One statement for the three pragmas (table-valued pragma functions, SQLite >= 3.16).
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_->Prepare("SELECT (SELECT page_count FROM pragma_page_count()) - "
                                   "(SELECT freelist_count FROM pragma_freelist_count()), "
                                   "(SELECT page_size FROM pragma_page_size())"));
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal("the page-count pragmas returned no row");
  return stmt.ColumnInt64(0) * stmt.ColumnInt64(1);
}

Status Store::ProbeWrite() {
  std::lock_guard<std::mutex> lock(db_->mu());
  return db_->InTransaction([&] {
    return db_->Exec("INSERT INTO write_probe (payload) VALUES (zeroblob(16384)); "
                     "DELETE FROM write_probe;");
  });
}

Store::Store(std::unique_ptr<Database> db, int schema_version)
    : db_(std::move(db)),
      schema_version_(schema_version),
      services_(*db_),
      rules_(*db_),
      replicas_(*db_),
      leases_(*db_),
      decisions_(*db_),
      events_(*db_),
      tasks_(*db_) {}

}  // namespace gpuscale::store
