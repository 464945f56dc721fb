#include "store/migrations.h"

#include <fmt/format.h>

namespace gpuscale::store {
namespace {

constexpr std::string_view kInitialSchema = R"sql(
CREATE TABLE services (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  paused INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
CREATE TABLE rules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  service TEXT NOT NULL REFERENCES services(name) ON DELETE CASCADE,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  metric TEXT NOT NULL,
  aggregation TEXT NOT NULL,
  comparator TEXT NOT NULL,
  threshold REAL NOT NULL,
  step_size INTEGER NOT NULL,
  cooldown_seconds REAL NOT NULL,
  min_replicas INTEGER NOT NULL,
  max_replicas INTEGER NOT NULL,
  enabled INTEGER NOT NULL,
  created_at REAL NOT NULL,
  UNIQUE (service, name)
);
CREATE TABLE replicas (
  id TEXT PRIMARY KEY,
  service TEXT NOT NULL,
  phase TEXT NOT NULL,
  pid INTEGER NOT NULL,
  port INTEGER NOT NULL,
  gpus TEXT NOT NULL,
  gpu_keys TEXT NOT NULL,
  lease_owner TEXT NOT NULL,
  argv TEXT NOT NULL,
  log_path TEXT NOT NULL,
  restarts INTEGER NOT NULL,
  started_at REAL NOT NULL,
  phase_since REAL NOT NULL,
  updated_at REAL NOT NULL
);
CREATE INDEX replicas_by_service ON replicas (service);
CREATE TABLE leases (
  key TEXT PRIMARY KEY,
  gpu_index INTEGER NOT NULL,
  node TEXT NOT NULL,
  owner TEXT NOT NULL,
  acquired_at REAL NOT NULL
);
CREATE INDEX leases_by_owner ON leases (owner);
CREATE TABLE decisions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  service TEXT NOT NULL,
  at REAL NOT NULL,
  policy TEXT NOT NULL,
  current_replicas INTEGER NOT NULL,
  ready_replicas INTEGER NOT NULL,
  desired_replicas INTEGER NOT NULL,
  reason TEXT NOT NULL,
  details TEXT NOT NULL,
  actions TEXT NOT NULL
);
CREATE INDEX decisions_by_service ON decisions (service, id);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at REAL NOT NULL,
  service TEXT NOT NULL,
  kind TEXT NOT NULL,
  replica TEXT NOT NULL,
  message TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX events_by_service ON events (service, id);
CREATE INDEX events_by_kind ON events (kind, id);
)sql";

// Version 2: replicas run by cluster engines (Slurm: a job on some node) need the node's
// host and the engine's id of the replica; tasks and their experiments (tasks/experiments
// feature). Structured results are JSON text written by task/task_codec.
constexpr std::string_view kEnginesAndTasks = R"sql(
ALTER TABLE replicas ADD COLUMN host TEXT NOT NULL DEFAULT '127.0.0.1';
ALTER TABLE replicas ADD COLUMN engine_id TEXT NOT NULL DEFAULT '';
CREATE TABLE tasks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  source_text TEXT NOT NULL,
  status TEXT NOT NULL,
  priority INTEGER NOT NULL,
  experiments_total INTEGER NOT NULL,
  experiments_done INTEGER NOT NULL,
  best_experiment_id INTEGER,
  message TEXT NOT NULL,
  created_at REAL NOT NULL,
  finished_at REAL
);
CREATE TABLE experiments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  status TEXT NOT NULL,
  parameters TEXT NOT NULL,
  gpus_required INTEGER NOT NULL,
  memory_mb_per_gpu INTEGER NOT NULL,
  results TEXT NOT NULL,
  server_argv TEXT NOT NULL,
  pid INTEGER NOT NULL,
  port INTEGER NOT NULL,
  lease_owner TEXT NOT NULL,
  log_path TEXT NOT NULL,
  message TEXT NOT NULL,
  queued_at REAL NOT NULL,
  started_at REAL,
  finished_at REAL,
  UNIQUE (task_id, idx)
);
CREATE INDEX experiments_by_status ON experiments (status, id);
)sql";

// Version 3: a deleted service's row is kept (marked deleting) until its replicas are gone,
// so a restarted daemon stops them through the right engine (e.g. cancels Slurm jobs); the
// manual replica override survives restarts. NULL manual_replicas = the policy decides.
constexpr std::string_view kDeletingAndManual = R"sql(
ALTER TABLE services ADD COLUMN deleting INTEGER NOT NULL DEFAULT 0;
ALTER TABLE services ADD COLUMN manual_replicas INTEGER;
)sql";

// Version 4: a scratch table the daemon writes a row to and empties in one transaction while
// a write that nothing retries is failing, to see when the disk takes writes again
// (Store::ProbeWrite, /readyz). Always empty between transactions.
constexpr std::string_view kWriteProbe = R"sql(
CREATE TABLE write_probe (id INTEGER PRIMARY KEY, payload BLOB NOT NULL);
)sql";

constexpr std::string_view kVersionTable =
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
    "name TEXT NOT NULL, applied_at REAL NOT NULL)";

Status CheckOrder(const std::vector<Migration>& migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return Internal(fmt::format("migration list out of order: position {} has version {}, "
                                  "expected {}",
                                  i, migrations[i].version, i + 1));
    }
  }
  return OkStatus();
}

Status ApplyOne(Database& db, const Migration& migration, Seconds now) {
  return db.InTransaction([&]() -> Status {
    Status applied = db.Exec(migration.sql);
    if (!applied) {
      Error error = applied.error();
      error.message = fmt::format("schema migration {} ({}) failed: {}", migration.version,
                                  migration.name, error.message);
      return Unexpected<Error>(std::move(error));
    }
    GS_ASSIGN_OR_RETURN(Statement stamp,
                        db.Prepare("INSERT INTO schema_version (version, name, applied_at) "
                                   "VALUES (?1, ?2, ?3)"));
    stamp.Bind(1, int64_t{migration.version}).Bind(2, migration.name).Bind(3, now.count());
    return stamp.Run();
  });
}

}  // namespace

const std::vector<Migration>& SchemaMigrations() {
  static const std::vector<Migration> migrations = {
      {1, "initial schema: services, rules, replicas, leases, decisions, events",
       kInitialSchema},
      {2, "replica host and engine id; tasks and experiments", kEnginesAndTasks},
      {3, "service deleting flag and persisted manual replica override", kDeletingAndManual},
      {4, "write probe table (readiness on a full disk)", kWriteProbe},
  };
  return migrations;
}

Result<int> SchemaVersion(Database& db) {
  GS_ASSIGN_OR_RETURN(Statement exists,
                      db.Prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                 "name = 'schema_version'"));
  GS_ASSIGN_OR_RETURN(bool row, exists.Step());
  if (!row || exists.ColumnInt64(0) == 0) return 0;
  GS_ASSIGN_OR_RETURN(Statement max, db.Prepare("SELECT coalesce(max(version), 0) FROM "
                                                "schema_version"));
  GS_ASSIGN_OR_RETURN(row, max.Step());
  return row ? static_cast<int>(max.ColumnInt64(0)) : 0;
}

Result<int> ApplyMigrations(Database& db, const std::vector<Migration>& migrations,
                            Seconds now) {
  GS_RETURN_IF_ERROR(CheckOrder(migrations));
  GS_RETURN_IF_ERROR(db.Exec(kVersionTable));
  GS_ASSIGN_OR_RETURN(int version, SchemaVersion(db));
  const int known = static_cast<int>(migrations.size());
  if (version > known) {
    return FailedPrecondition(fmt::format(
        "state database '{}' has schema version {}, but this gpuscale knows versions up to {}; "
        "run a newer gpuscale or point --state-dir at another directory",
        db.path().string(), version, known));
  }
  for (int v = version + 1; v <= known; ++v) {
    GS_RETURN_IF_ERROR(ApplyOne(db, migrations[static_cast<size_t>(v - 1)], now));
  }
  return known;
}

}  // namespace gpuscale::store
