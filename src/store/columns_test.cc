#include "store/columns.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <type_traits>

#include "store/store.h"
#include "store/tables.h"
#include "testing/store_test_util.h"

namespace gpuscale::store {
namespace {

using ::testing::HasSubstr;

// A table of the test's own: one column of each Written kind, a JSON and an optional one.
struct SampleRow {
  int64_t id = 0;
  std::string name;
  std::vector<int> gpus;
  std::optional<Seconds> done_at;
  Seconds created_at{0};

  bool operator==(const SampleRow&) const = default;
};
constexpr Column<SampleRow> kSampleColumns[] = {
    {"id", &SampleRow::id, Written::kNever},
    {"name", &SampleRow::name},
    {"gpus", &SampleRow::gpus},
    {"done_at", &SampleRow::done_at},
    {"created_at", &SampleRow::created_at, Written::kOnInsert},
};
constexpr Table<SampleRow> kSamples{"samples", kSampleColumns};

TEST(TableTest, DerivesEveryStatementFromTheColumnArray) {
  EXPECT_EQ(kSamples.Select(), "SELECT id, name, gpus, done_at, created_at FROM samples");
  EXPECT_EQ(kSamples.Insert(),
            "INSERT INTO samples (name, gpus, done_at, created_at) VALUES (?2, ?3, ?4, ?5)");
  EXPECT_EQ(kSamples.Insert("INSERT OR REPLACE"),
            "INSERT OR REPLACE INTO samples (name, gpus, done_at, created_at) "
            "VALUES (?2, ?3, ?4, ?5)");
  EXPECT_EQ(kSamples.Assignments(), "name = ?2, gpus = ?3, done_at = ?4");
  EXPECT_EQ(kSamples.Update(),
            "UPDATE samples SET name = ?2, gpus = ?3, done_at = ?4 WHERE id = ?1");
}

class SampleTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(":memory:");
    ASSERT_TRUE(db) << db.error().ToString();
    db_ = std::move(*db);
    ASSERT_TRUE(
        db_->Exec("CREATE TABLE samples (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                  "name TEXT NOT NULL, gpus TEXT NOT NULL, done_at REAL, "
                  "created_at REAL NOT NULL)"));
  }
  Result<SampleRow> Get(int64_t id) {
    GS_ASSIGN_OR_RETURN(Statement stmt, db_->Prepare(kSamples.Select() + " WHERE id = ?1"));
    stmt.Bind(1, id);
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return NotFound("no sample");
    return kSamples.Read(stmt);
  }
  std::unique_ptr<Database> db_;
};

TEST_F(SampleTableTest, InsertsUpdatesAndReadsBackEveryColumn) {
  const SampleRow inserted{0, "a", {1, 2}, Seconds{3.5}, Seconds{1}};
  auto insert = db_->Prepare(kSamples.Insert());
  ASSERT_TRUE(insert);
  kSamples.BindInsert(*insert, inserted);
  ASSERT_TRUE(insert->Run());
  const int64_t id = db_->LastInsertRowId();
  SampleRow expected = inserted;
  expected.id = id;  // the id column is never written: SQLite assigns it
  Result<SampleRow> read = Get(id);
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_TRUE(*read == expected);

  // The update leaves created_at (kOnInsert) alone and writes an empty optional as NULL.
  const SampleRow updated{id, "b", {}, std::nullopt, Seconds{99}};
  auto update = db_->Prepare(kSamples.Update());
  ASSERT_TRUE(update);
  kSamples.BindUpdate(*update, updated);
  ASSERT_TRUE(update->Run());
  EXPECT_EQ(db_->Changes(), 1);
  read = Get(id);
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_TRUE(*read == (SampleRow{id, "b", {}, std::nullopt, Seconds{1}}));
}

TEST_F(SampleTableTest, AColumnThatIsNotJsonNamesTableAndColumn) {
  ASSERT_TRUE(db_->Exec("INSERT INTO samples (name, gpus, created_at) VALUES ('a', '[1,', 0)"));
  Result<SampleRow> read = Get(db_->LastInsertRowId());
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kInternal);
  EXPECT_THAT(read.error().message, HasSubstr("column 'samples.gpus' holds '[1,'"));
}

// Calls f(table, row) for every table of tables.h with a row whose fields are all set
// (store_test_util.h); parents before children, for the tests that insert.
template <typename F>
void ForEachTable(F&& f) {
  f(kServices, FullService());
  f(kRules, FullRule());
  f(kReplicas, FullReplica());
  f(kLeases, FullLease());
  f(kDecisions, FullDecision());
  f(kEvents, FullEvent());
  f(kTasks, FullTask());
  f(kExperiments, FullExperiment());
}

// "a, b, c" -> {"a", "b", "c"}.
std::vector<std::string> SplitList(std::string_view list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(", ", start), list.size());
    items.emplace_back(list.substr(start, comma - start));
    start = comma + 2;
  }
  return items;
}

// The text between `open` and the next ')'.
std::string_view Between(std::string_view text, std::string_view open) {
  const size_t start = text.find(open) + open.size();
  return text.substr(start, text.find(')', start) - start);
}

template <typename Row>
std::map<std::string, int, std::less<>> Positions(const Table<Row>& table) {
  std::map<std::string, int, std::less<>> positions;
  for (const Column<Row>& column : table.columns()) {
    positions.emplace(column.name, static_cast<int>(positions.size()));
  }
  return positions;
}

TEST(TablesTest, EachInsertListsOnePlaceholderPerColumnNumberedByPosition) {
  ForEachTable([](const auto& table, const auto&) {
    SCOPED_TRACE(table.name());
    const auto positions = Positions(table);
    ASSERT_EQ(positions.size(), table.columns().size()) << "a column is listed twice";
    EXPECT_NE(table.columns()[0].written, Written::kAlways) << "the key must not be updated";
    const std::string insert = table.Insert();
    const std::vector<std::string> names = SplitList(Between(insert, "("));
    const std::vector<std::string> placeholders = SplitList(Between(insert, "VALUES ("));
    ASSERT_EQ(names.size(), placeholders.size()) << insert;
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(placeholders[i], "?" + std::to_string(positions.at(names[i]) + 1)) << insert;
    }
    for (const std::string& assignment : SplitList(table.Assignments())) {
      const std::string name = assignment.substr(0, assignment.find(" = "));
      EXPECT_EQ(assignment, name + " = ?" + std::to_string(positions.at(name) + 1));
    }
  });
}

class MigratedTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(":memory:", Seconds{0});
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
  }
  Database& db() { return store_->database(); }

  // The schema's column names of `table`, in the order migrations created them.
  std::vector<std::string> SchemaColumns(std::string_view table) {
    std::vector<std::string> names;
    auto stmt = db().Prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid");
    EXPECT_TRUE(stmt);
    if (!stmt) return names;
    stmt->Bind(1, table);
    while (stmt->Step().value_or(false)) names.push_back(stmt->ColumnText(0));
    return names;
  }

  // Inserts `row` with the table's Insert() and reads it back by rowid (every table has one;
  // an AUTOINCREMENT id is the rowid). The row id goes to *rowid.
  template <typename Row>
  Result<Row> InsertAndRead(const Table<Row>& table, const Row& row, int64_t* rowid) {
    GS_ASSIGN_OR_RETURN(Statement insert, db().Prepare(table.Insert()));
    table.BindInsert(insert, row);
    GS_RETURN_IF_ERROR(insert.Run());
    *rowid = db().LastInsertRowId();
    return ReadByRowid(table, *rowid);
  }
  template <typename Row>
  Result<Row> ReadByRowid(const Table<Row>& table, int64_t rowid) {
    GS_ASSIGN_OR_RETURN(Statement select, db().Prepare(table.Select() + " WHERE rowid = ?1"));
    select.Bind(1, rowid);
    GS_ASSIGN_OR_RETURN(bool found, select.Step());
    if (!found) return NotFound("row vanished");
    return table.Read(select);
  }

  std::unique_ptr<Store> store_;
};

// A column the schema has but the mapping forgot (or a typo in a name) fails here, not in
// production. Order is free: Select() reads columns by their place in the array.
TEST_F(MigratedTablesTest, EveryTableMapsExactlyTheSchemaColumns) {
  ForEachTable([&](const auto& table, const auto&) {
    std::vector<std::string> mapped;
    for (const auto& column : table.columns()) mapped.emplace_back(column.name);
    std::vector<std::string> schema = SchemaColumns(table.name());
    std::sort(mapped.begin(), mapped.end());
    std::sort(schema.begin(), schema.end());
    EXPECT_EQ(mapped, schema) << table.name();
  });
}

// `row` as stored: a column SQLite assigns (the id) takes the value it assigned.
template <typename Row>
Row WithAssignedKey(const Table<Row>& table, Row row, int64_t rowid) {
  if (table.columns()[0].written != Written::kNever) return row;
  std::visit(
      [&](auto member) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(row.*member)>, int64_t>) {
          row.*member = rowid;
        }
      },
      table.columns()[0].field);
  return row;
}

TEST_F(MigratedTablesTest, EveryRowReadsBackEqualToWhatWasInserted) {
  // Foreign keys are not what this test is about: a rule's service or an experiment's task
  // need not exist.
  ASSERT_TRUE(db().Exec("PRAGMA foreign_keys = OFF"));
  ForEachTable([&](const auto& table, const auto& row) {
    int64_t rowid = 0;
    auto read = InsertAndRead(table, row, &rowid);
    ASSERT_TRUE(read) << table.name() << ": " << read.error().ToString();
    EXPECT_TRUE(*read == WithAssignedKey(table, row, rowid)) << table.name();
  });
}

// Copies `column` of `from` into `to`.
template <typename Row>
void CopyColumn(const Column<Row>& column, const Row& from, Row& to) {
  std::visit([&](auto member) { to.*member = from.*member; }, column.field);
}

// Updating a full row with a default-constructed one that has only its key must change every
// updated column and no other: a column Update() forgets keeps its full value, and a key or
// insert-only column it wrongly writes takes the default.
TEST_F(MigratedTablesTest, UpdateWritesEveryColumnButTheKeyAndInsertOnlyOnes) {
  ASSERT_TRUE(db().Exec("PRAGMA foreign_keys = OFF"));
  ForEachTable([&](const auto& table, const auto& row) {
    using Row = std::remove_cvref_t<decltype(row)>;
    int64_t rowid = 0;
    auto stored = InsertAndRead(table, row, &rowid);
    ASSERT_TRUE(stored) << table.name() << ": " << stored.error().ToString();
    Row update{};
    CopyColumn(table.columns()[0], *stored, update);
    Row expected = update;
    for (const Column<Row>& column : table.columns()) {
      if (column.written != Written::kAlways) CopyColumn(column, *stored, expected);
    }
    auto stmt = db().Prepare(table.Update());
    ASSERT_TRUE(stmt) << stmt.error().ToString();
    table.BindUpdate(*stmt, update);
    ASSERT_TRUE(stmt->Run()) << table.name();
    EXPECT_EQ(db().Changes(), 1) << table.name();
    auto read = ReadByRowid(table, rowid);
    ASSERT_TRUE(read) << table.name() << ": " << read.error().ToString();
    EXPECT_TRUE(*read == expected) << table.name();
  });
}

}  // namespace
}  // namespace gpuscale::store
