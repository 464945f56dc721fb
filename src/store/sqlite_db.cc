#include "store/sqlite_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <system_error>

namespace gpuscale::store {
namespace {

Unexpected<Error> StepError(sqlite3* db, int rc, const std::string& sql) {
  const int primary = rc & 0xff;
  std::string message = fmt::format("{} (while running: {})", sqlite3_errmsg(db), sql);
  if (primary == SQLITE_CONSTRAINT) return FailedPrecondition(std::move(message));
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return Unavailable("the state database is locked by another process (another gpuscale "
                       "serve on the same --state-dir?): " + message);
  }
  // The database is fine but cannot be written now: the caller may retry once the operator
  // freed space or fixed the file, so these are kUnavailable (HTTP 503), not internal.
  if (primary == SQLITE_FULL) {
    return Unavailable("the state database cannot grow: its disk is full (or it reached its "
                       "size cap); free space under the state directory: " + message);
  }
  if (primary == SQLITE_IOERR || primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN) {
    return Unavailable("the state database cannot be written (disk error, read-only file or "
                       "permissions under the state directory): " + message);
  }
  return Internal(std::move(message));
}

}  // namespace

Statement::Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql)
    : db_(db), stmt_(stmt), sql_(std::move(sql)) {}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), sql_(std::move(other.sql_)),
      bind_error_(other.bind_error_) {
  other.stmt_ = nullptr;
}

Statement& Statement::Bind(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::Bind(int index, std::string_view text) {
  const int rc = sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                                   SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::BindNull(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Result<bool> Statement::Step() {
  if (bind_error_ != 0) {
    return Internal(fmt::format("bind failed: {} (while running: {})",
                                sqlite3_errstr(bind_error_), sql_));
  }
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return StepError(db_, rc, sql_);
}

Status Statement::Run() {
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return OkStatus();
  }
}

int64_t Statement::ColumnInt64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::ColumnText(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (text == nullptr) return {};
  return std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

namespace {

// What to do about a 0-byte database: restore the copy taken at the last start when there is
// one (a daemon that never started, or had no room for the copy, left none), else start
// without state or from a backup of the user's own.
std::string EmptyDatabaseMessage(const std::filesystem::path& path) {
  const std::string db = path.string();
  const std::string backup = db + ".bak";
  std::error_code ec;
  const bool has_backup = std::filesystem::is_regular_file(backup, ec) &&
                          std::filesystem::file_size(backup, ec) > 0 && !ec;
  const std::string head = fmt::format(
      "state database '{}' is empty (0 bytes): it was truncated (a full disk or a bad copy?)",
      db);
  if (has_backup) {
    return fmt::format("{}. Restore the copy taken at the last start: 'mv {} {}.damaged; rm -f "
                       "{}-wal {}-shm; cp {} {}'",
                       head, db, db, db, db, backup, db);
  }
  return fmt::format("{}, and there is no copy from a last start ('{}' does not exist or is "
                     "empty). Restore a backup of your own ('sqlite3 ... .backup'), or move the "
                     "file away ('mv {} {}.damaged') to start without state",
                     head, backup, db, db);
}

}  // namespace

Result<std::unique_ptr<Database>> Database::Open(const std::filesystem::path& path,
                                                 const OpenOptions& options) {
  const bool in_memory = path == ":memory:";
  if (!in_memory && path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      return Unavailable(fmt::format("cannot create directory '{}' for the state database: {}",
                                     path.parent_path().string(), ec.message()));
    }
  }
  if (!in_memory) {
    // SQLite takes a 0-byte file for a new, empty database: state lost to a full disk or a
    // bad copy would silently become "no services". A database gpuscale made is never empty
    // (opening it writes the WAL header and the schema at once).
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0 &&
        !ec) {
      return FailedPrecondition(EmptyDatabaseMessage(path), "state_dir");
    }
  }
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(raw, path));
  if (rc != SQLITE_OK) {
    return Unavailable(fmt::format("cannot open state database '{}': {}", path.string(),
                                   raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(raw, static_cast<int>(options.busy_timeout.count() * 1000));
  // journal_mode is the first statement that reads the file, so a non-database file fails
  // here; say which file.
  Status pragmas = db->Exec(in_memory ? "PRAGMA foreign_keys=ON;"
                                      : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                                        "PRAGMA foreign_keys=ON;");
  if (!pragmas) {
    return Unavailable(fmt::format("cannot use '{}' as the state database: {}", path.string(),
                                   pragmas.error().message));
  }
  return db;
}

Status Database::BackupTo(const std::filesystem::path& target) {
  const std::filesystem::path partial = target.string() + ".partial";
  sqlite3* dest = nullptr;
  int rc = sqlite3_open_v2(partial.c_str(), &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                           nullptr);
  if (rc == SQLITE_OK) {
    std::lock_guard<std::mutex> lock(mu_);
    sqlite3_backup* backup = sqlite3_backup_init(dest, "main", db_, "main");
    if (backup != nullptr) {
      sqlite3_backup_step(backup, -1);
      sqlite3_backup_finish(backup);
    }
    rc = sqlite3_errcode(dest);
  }
  const std::string message = dest != nullptr ? sqlite3_errmsg(dest) : sqlite3_errstr(rc);
  sqlite3_close_v2(dest);
  std::error_code ec;
  if (rc != SQLITE_OK) {
    std::filesystem::remove(partial, ec);
    return Unavailable(fmt::format("cannot back up the state database to '{}': {}",
                                   target.string(), message));
  }
  // Renamed into place whole: a crash mid-copy never leaves a half backup under the name.
  std::filesystem::rename(partial, target, ec);
  if (ec) {
    return Unavailable(fmt::format("cannot back up the state database to '{}': {}",
                                   target.string(), ec.message()));
  }
  return OkStatus();
}

Database::~Database() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    if (stmt != nullptr) sqlite3_finalize(stmt);
    return StepError(db_, rc, std::string(sql));
  }
  return Statement(db_, stmt, std::string(sql));
}

Status Database::Exec(std::string_view sql) {
  const char* next = sql.data();
  const char* end = sql.data() + sql.size();
  while (next < end) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    const int rc =
        sqlite3_prepare_v2(db_, next, static_cast<int>(end - next), &stmt, &tail);
    if (rc != SQLITE_OK) {
      if (stmt != nullptr) sqlite3_finalize(stmt);
      return StepError(db_, rc, std::string(next, end));
    }
    if (stmt == nullptr) break;  // only whitespace or comments left
    Statement statement(db_, stmt, std::string(next, tail));
    GS_RETURN_IF_ERROR(statement.Run());
    next = tail;
  }
  return OkStatus();
}

int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

int64_t Database::Changes() const { return sqlite3_changes64(db_); }

Result<std::string> Database::JournalMode() {
  GS_ASSIGN_OR_RETURN(Statement stmt, Prepare("PRAGMA journal_mode"));
  GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal("PRAGMA journal_mode returned no row");
  return stmt.ColumnText(0);
}

Status Database::InTransaction(const std::function<Status()>& body) {
  GS_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Status status = body();
  // A ROLLBACK that fails (SQLite already rolled back after an I/O error) adds nothing to
  // the error that caused it, which is the one reported.
  if (!status) {
    (void)Exec("ROLLBACK");
    return status;
  }
  Status commit = Exec("COMMIT");
  if (!commit) (void)Exec("ROLLBACK");
  return commit;
}

}  // namespace gpuscale::store
