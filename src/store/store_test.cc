#include "store/store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "store/migrations.h"
#include "testing/store_test_util.h"

namespace gpuscale::store {
namespace {

using StoreOpenTest = TempDirTest;

TEST_F(StoreOpenTest, CreatesDirectoriesAndMigratesFromEmpty) {
  const auto path = dir_ / "nested" / "state" / "gpuscale.db";
  auto store = Store::Open(path, Seconds{100});
  ASSERT_TRUE(store) << store.error().ToString();
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ((*store)->schema_version(), static_cast<int>(SchemaMigrations().size()));
  std::lock_guard<std::mutex> lock((*store)->database().mu());
  auto version = SchemaVersion((*store)->database());
  ASSERT_TRUE(version);
  EXPECT_EQ(*version, static_cast<int>(SchemaMigrations().size()));
}

TEST_F(StoreOpenTest, UsesWalJournal) {
  auto store = Store::Open(dir_ / "gpuscale.db", Seconds{0});
  ASSERT_TRUE(store) << store.error().ToString();
  std::lock_guard<std::mutex> lock((*store)->database().mu());
  auto mode = (*store)->database().JournalMode();
  ASSERT_TRUE(mode);
  EXPECT_EQ(*mode, "wal");
}

TEST_F(StoreOpenTest, ReopenIsIdempotentAndKeepsData) {
  const auto path = dir_ / "gpuscale.db";
  {
    auto store = Store::Open(path, Seconds{1});
    ASSERT_TRUE(store);
    ASSERT_TRUE(
        (*store)->services().Put(MakeServiceRow("chat", "spec: 1", Seconds{1}, Seconds{1})));
  }
  auto again = Store::Open(path, Seconds{2});
  ASSERT_TRUE(again) << again.error().ToString();
  auto chat = (*again)->services().Get("chat");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->spec, "spec: 1");
  std::lock_guard<std::mutex> lock((*again)->database().mu());
  auto rows = (*again)->database().Prepare("SELECT count(*), min(applied_at) FROM schema_version");
  ASSERT_TRUE(rows);
  ASSERT_TRUE(*rows->Step());
  // Not applied a second time: one row per migration.
  EXPECT_EQ(rows->ColumnInt64(0), static_cast<int64_t>(SchemaMigrations().size()));
  EXPECT_DOUBLE_EQ(rows->ColumnDouble(1), 1.0);
}

// A truncated database must not start as a fresh one (every service gone, no word).
TEST_F(StoreOpenTest, RefusesAZeroByteDatabaseNamingTheBackup) {
  const auto path = dir_ / "gpuscale.db";
  ASSERT_TRUE(Store::Open(dir_ / "other.db", Seconds{0}));
  std::filesystem::copy_file(dir_ / "other.db", path.string() + ".bak");  // a last start's copy
  std::ofstream(path).close();
  auto store = Store::Open(path, Seconds{0});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(store.error().message.find("is empty (0 bytes)"), std::string::npos);
  EXPECT_NE(store.error().message.find("cp " + path.string() + ".bak " + path.string()),
            std::string::npos)
      << store.error().message;
  EXPECT_EQ(std::filesystem::file_size(path), 0u) << "left as it was";
}

// No start ever copied it (or there was no room): the message must not send the user to a
// file that is not there.
TEST_F(StoreOpenTest, RefusesAZeroByteDatabaseWithoutABackupSayingThereIsNone) {
  const auto path = dir_ / "gpuscale.db";
  std::ofstream(path).close();
  auto store = Store::Open(path, Seconds{0});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  const std::string& message = store.error().message;
  EXPECT_EQ(message.find("cp "), std::string::npos) << message;
  EXPECT_NE(message.find("there is no copy from a last start"), std::string::npos) << message;
  EXPECT_NE(message.find("mv " + path.string() + " " + path.string() + ".damaged"),
            std::string::npos)
      << message;
}

// The probe write fails while the database is full (a size cap stands in for the disk) and
// succeeds once rows are deleted; it leaves nothing behind.
TEST_F(StoreOpenTest, ProbeWriteFailsWhileTheDatabaseIsFullAndLeavesNoRow) {
  OpenOptions options;
  options.max_bytes = 256 * 1024;
  auto store = Store::Open(dir_ / "gpuscale.db", Seconds{0}, options);
  ASSERT_TRUE(store) << store.error().ToString();
  ASSERT_TRUE((*store)->ProbeWrite());
  int rows = 0;
  for (; rows < 100; ++rows) {
    const std::string name = "svc" + std::to_string(rows);
    if (!(*store)->services().Put(
            MakeServiceRow(name, std::string(8192, 'x'), Seconds{0}, Seconds{0}))) {
      break;
    }
  }
  ASSERT_LT(rows, 100) << "the cap was never reached";
  Status full = (*store)->ProbeWrite();
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, ErrorCode::kUnavailable);
  for (int i = 0; i < rows; ++i) ASSERT_TRUE((*store)->services().Delete("svc" + std::to_string(i)));
  EXPECT_TRUE((*store)->ProbeWrite());
  std::lock_guard<std::mutex> lock((*store)->database().mu());
  auto count = (*store)->database().Prepare("SELECT count(*) FROM write_probe");
  ASSERT_TRUE(count);
  ASSERT_TRUE(*count->Step());
  EXPECT_EQ(count->ColumnInt64(0), 0);
}

TEST_F(StoreOpenTest, BackupIsACompleteDatabaseThatOpensWithTheSameState) {
  const auto path = dir_ / "gpuscale.db";
  const auto backup = dir_ / "gpuscale.db.bak";
  {
    auto store = Store::Open(path, Seconds{1});
    ASSERT_TRUE(store);
    ASSERT_TRUE(
        (*store)->services().Put(MakeServiceRow("chat", "spec: 1", Seconds{1}, Seconds{1})));
    ASSERT_TRUE((*store)->database().BackupTo(backup));
    EXPECT_FALSE(std::filesystem::exists(backup.string() + ".partial"));
    // A later change is not in the copy.
    ASSERT_TRUE(
        (*store)->services().Put(MakeServiceRow("code", "spec: 2", Seconds{2}, Seconds{2})));
  }
  auto restored = Store::Open(backup, Seconds{3});
  ASSERT_TRUE(restored) << restored.error().ToString();
  ASSERT_TRUE((*restored)->services().Get("chat"));
  EXPECT_EQ((*restored)->services().Get("chat")->spec, "spec: 1");
  EXPECT_FALSE((*restored)->services().Get("code"));
  auto store = Store::Open(path, Seconds{4});
  ASSERT_TRUE(store);
  EXPECT_FALSE((*store)->database().BackupTo(dir_ / "no" / "such" / "dir" / "x.bak"));
}

TEST_F(StoreOpenTest, RejectsAFileThatIsNotADatabase) {
  const auto path = dir_ / "not-a-db";
  std::ofstream(path) << "this is not sqlite, just some text long enough to have a header....";
  auto store = Store::Open(path, Seconds{0});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(store.error().message.find("not-a-db"), std::string::npos) << store.error().message;
}

TEST_F(StoreOpenTest, RefusesADatabaseFromANewerGpuscale) {
  const auto path = dir_ / "gpuscale.db";
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db);
    std::lock_guard<std::mutex> lock((*db)->mu());
    std::vector<Migration> future = SchemaMigrations();
    const int later = static_cast<int>(future.size()) + 1;
    future.push_back({later, "from the future", "CREATE TABLE later (x INTEGER)"});
    ASSERT_TRUE(ApplyMigrations(**db, future, Seconds{0}));
  }
  auto store = Store::Open(path, Seconds{0});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(store.error().message.find(
                fmt::format("schema version {}", SchemaMigrations().size() + 1)),
            std::string::npos)
      << store.error().message;
}

TEST_F(StoreOpenTest, WritesPastTheSizeCapAreUnavailableLikeAFullDisk) {
  OpenOptions options;
  options.max_bytes = 1;  // capped at the size it has after migrating
  auto store = Store::Open(dir_ / "gpuscale.db", Seconds{0}, options);
  ASSERT_TRUE(store) << store.error().ToString();
  Result<int64_t> id;
  const std::string message(2000, 'm');
  for (int i = 0; i < 100 && (id = (*store)->events().Append(
                                  EventRow{0, Seconds{double(i)}, "s", "tick", "", message, ""}));
       ++i) {
  }
  ASSERT_FALSE(id) << "100 events of 2 KB fit under the cap";
  EXPECT_EQ(id.error().code, ErrorCode::kUnavailable) << id.error().ToString();
  EXPECT_NE(id.error().message.find("disk is full"), std::string::npos) << id.error().message;
  // Reads still work: the state that was saved is intact.
  EXPECT_TRUE((*store)->events().Query(EventQuery{0, "", "", 10}));
}

TEST_F(StoreOpenTest, ConcurrentWritersFromSeveralThreadsAllLand) {
  auto store = Store::Open(dir_ / "gpuscale.db", Seconds{0});
  ASSERT_TRUE(store);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        EXPECT_TRUE((*store)->events().Append(
            EventRow{0, Seconds{double(i)}, "s" + std::to_string(t), "tick", "", "m", ""}));
        EXPECT_TRUE((*store)->events().Query(EventQuery{0, "", "", 10}));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(*(*store)->events().LatestId(), 100);
  EXPECT_EQ((*store)->events().Query(EventQuery{0, "s2", "", 1000})->size(), 25u);
}

class MigrationTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto db = Database::Open(dir_ / "m.db");
    ASSERT_TRUE(db);
    db_ = std::move(*db);
  }
  bool HasTable(const std::string& name) {
    auto stmt = db_->Prepare("SELECT count(*) FROM sqlite_master WHERE name = ?1");
    stmt->Bind(1, name);
    return *stmt->Step() && stmt->ColumnInt64(0) == 1;
  }
  std::unique_ptr<Database> db_;
};

TEST_F(MigrationTest, AppliesOnlyPendingMigrationsInOrder) {
  std::vector<Migration> v1 = {{1, "a", "CREATE TABLE a (x INTEGER)"}};
  ASSERT_EQ(*ApplyMigrations(*db_, v1, Seconds{0}), 1);
  std::vector<Migration> v2 = v1;
  v2.push_back({2, "b", "CREATE TABLE b (x INTEGER); INSERT INTO a VALUES (7);"});
  // Re-running v1's CREATE TABLE would fail: reaching 2 proves only migration 2 ran.
  auto reached = ApplyMigrations(*db_, v2, Seconds{0});
  ASSERT_TRUE(reached) << reached.error().ToString();
  EXPECT_EQ(*reached, 2);
  EXPECT_TRUE(HasTable("b"));
  EXPECT_EQ(*ApplyMigrations(*db_, v2, Seconds{0}), 2);
}

// A database written by a gpuscale with schema 2 (before services had `deleting` and
// `manual_replicas`) upgrades in place: its rows read back with the new columns' defaults.
TEST_F(MigrationTest, UpgradesAVersion2DatabaseAndKeepsItsServices) {
  const std::vector<Migration> v2(SchemaMigrations().begin(), SchemaMigrations().begin() + 2);
  {
    std::lock_guard<std::mutex> lock(db_->mu());
    ASSERT_EQ(*ApplyMigrations(*db_, v2, Seconds{0}), 2);
    ASSERT_TRUE(db_->Exec("INSERT INTO services (name, spec, paused, created_at, updated_at) "
                          "VALUES ('chat', 'engine: slurm', 0, 5, 6)"));
  }
  db_.reset();
  auto store = Store::Open(dir_ / "m.db", Seconds{10});
  ASSERT_TRUE(store) << store.error().ToString();
  EXPECT_EQ((*store)->schema_version(), static_cast<int>(SchemaMigrations().size()));
  auto chat = (*store)->services().Get("chat");
  ASSERT_TRUE(chat) << chat.error().ToString();
  EXPECT_EQ(chat->spec, "engine: slurm");
  EXPECT_EQ(chat->created_at, Seconds{5});
  EXPECT_FALSE(chat->deleting);
  EXPECT_FALSE(chat->manual_replicas.has_value());
  ASSERT_TRUE((*store)->services().SetManualReplicas("chat", 2));
  EXPECT_EQ((*store)->services().Get("chat")->manual_replicas, 2);
}

TEST_F(MigrationTest, FailedMigrationRollsBackAndNamesItsVersion) {
  std::vector<Migration> list = {
      {1, "good", "CREATE TABLE good (x INTEGER)"},
      {2, "broken", "CREATE TABLE half (x INTEGER); CREATE TABLE good (y INTEGER);"}};
  auto reached = ApplyMigrations(*db_, list, Seconds{0});
  ASSERT_FALSE(reached);
  EXPECT_NE(reached.error().message.find("migration 2 (broken)"), std::string::npos)
      << reached.error().message;
  EXPECT_EQ(*SchemaVersion(*db_), 1);
  EXPECT_FALSE(HasTable("half"));  // the failed migration's first statement was rolled back
}

TEST_F(MigrationTest, RejectsAListWithGaps) {
  std::vector<Migration> list = {{1, "a", "SELECT 1"}, {3, "c", "SELECT 1"}};
  auto reached = ApplyMigrations(*db_, list, Seconds{0});
  ASSERT_FALSE(reached);
  EXPECT_EQ(reached.error().code, ErrorCode::kInternal);
  EXPECT_EQ(*SchemaVersion(*db_), 0);
}

}  // namespace
}  // namespace gpuscale::store
