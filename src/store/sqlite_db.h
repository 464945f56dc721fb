// A thin, value-returning wrapper over one SQLite connection: open (creating the parent
// directory, WAL journal, busy timeout, foreign keys), prepared statements with positional
// binds, and transactions. Repositories (service_repository.h, ...) are written on top of it;
// nothing outside store/ sees SQLite itself (sqlite3 types are only forward-declared here).
//
// Ownership: Database owns the connection; a Statement borrows it and must not outlive it.
// Thread-safety: the connection is opened in SQLite's serialized mode, and Database::mu()
// is the lock repositories hold for the whole of one operation (several statements or a
// transaction), so Database and the repositories may be used from several threads. A
// Statement itself is used by one thread (the one holding mu()).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gpuscale::store {

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;

  // Binds parameter `index` (1-based, as in SQL `?1`). Chainable; a bind error surfaces at
  // Step() (binding cannot fail for valid indexes of a prepared statement).
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view text);
  Statement& BindNull(int index);

  // Runs one step. true: a row is available (read it with Column*); false: done.
  // Errors: kFailedPrecondition for a constraint violation (the message says which),
  // kUnavailable when the database stayed locked past the busy timeout or cannot be written
  // (disk full, I/O error, read-only file: the message says which and what to do),
  // kInternal otherwise.
  Result<bool> Step();
  // Steps to completion, ignoring rows (INSERT/UPDATE/DELETE).
  Status Run();

  int64_t ColumnInt64(int column) const;  // 0-based, as SQLite numbers result columns
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;  // "" for NULL
  bool ColumnIsNull(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string sql_;  // for error messages
  int bind_error_ = 0;
};

struct OpenOptions {
  // How long a statement waits for another connection's lock before failing. Default 5 s.
  Seconds busy_timeout{5};
  // The database's largest size in bytes (SQLite's max_page_count, set by Store::Open after
  // migrating); a write past it fails exactly as on a full disk. 0 = no cap but the disk's.
  int64_t max_bytes = 0;
};

class Database {
 public:
  // Opens (creating when absent) the database at `path`, creating missing parent
  // directories, and sets WAL journal mode (not available for ":memory:"), foreign keys on,
  // synchronous=NORMAL and the busy timeout. Errors: kUnavailable naming the path when the
  // directory or file cannot be created or opened, or the file is not a database;
  // kFailedPrecondition for an existing 0-byte file (truncated state, never silently new).
  static Result<std::unique_ptr<Database>> Open(const std::filesystem::path& path,
                                                const OpenOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Prepares one statement. Errors: kInternal with SQLite's message and the SQL (a bug in
  // our SQL, never user input: values always go through Bind).
  Result<Statement> Prepare(std::string_view sql);
  // Runs a fixed script of statements without parameters (schema DDL, pragmas, BEGIN).
  Status Exec(std::string_view sql);

  // Row id of the last INSERT on this connection (read it while holding mu()).
  int64_t LastInsertRowId() const;
  // Rows changed by the last INSERT/UPDATE/DELETE on this connection (hold mu()).
  int64_t Changes() const;
  // A consistent copy of the whole database at `target` (SQLite's online backup), written
  // to `target`.partial and renamed into place. Errors: kUnavailable naming the target.
  Status BackupTo(const std::filesystem::path& target);
  // "wal", "memory", "delete", ... as PRAGMA journal_mode reports it.
  Result<std::string> JournalMode();

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back when it returns an error.
  // REQUIRES: the caller holds mu() and no transaction is open.
  Status InTransaction(const std::function<Status()>& body);

  std::mutex& mu() { return mu_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  Database(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::filesystem::path path_;
  std::mutex mu_;  // held by repositories for one whole operation
};

}  // namespace gpuscale::store
