// egm query's gate (db/read_only_query.h): what passes reads; what would write,
// or change the connection, is a ConfigError before it runs. Statements here
// passed sqlite3_stmt_readonly and were stopped only by the read-only file
// (REINDEX with indexes) or changed the connection (PRAGMA query_only = OFF)
// before the authorizer; tests/fuzz/fuzz_query_gate.cpp looks for more.
#include <gtest/gtest.h>

#include <string>

#include "db/read_only_query.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm::db;
using egm::testing::FileSnapshot;
using egm::testing::ScratchDir;

class ReadOnlyQuery : public ::testing::Test {
 protected:
  void SetUp() override {
    ResultsDb db(path_, OpenMode::read_write_create);
  }
  ScratchDir dir_;
  std::string path_ = dir_.file("results.sqlite");
};

TEST_F(ReadOnlyQuery, ReadingStatementsPass) {
  Connection c(path_, OpenMode::read_only);
  for (const char* sql : {"SELECT count(*) FROM cells", "WITH x(n) AS (VALUES (1)) SELECT n FROM x", "VALUES (1, 2)",
                          "EXPLAIN SELECT * FROM runs", "PRAGMA table_info(cells)", "PRAGMA user_version",
                          "SELECT name FROM pragma_table_info('cells')", "SELECT value FROM json_each('[1, 2]')",
                          "SELECT json_extract('{\"a\":1}', '$.a')",
                          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) SELECT x FROM c"}) {
    try {
      prepare_read_only_query(c, sql).run();
    } catch (const egm::Error& e) {
      ADD_FAILURE() << sql << ": " << e.what();
    }
  }
}

TEST_F(ReadOnlyQuery, WritesAndConnectionChangesAreRefusedBeforeTheyRun) {
  const FileSnapshot before = FileSnapshot::of(path_);
  for (const char* sql : {"DELETE FROM cells", "UPDATE cells SET status = 'done'", "DROP TABLE cells",
                          "CREATE TABLE x(a)", "CREATE TEMP TABLE x(a)", "INSERT INTO events VALUES (1)",
                          "ALTER TABLE cells ADD COLUMN z", "PRAGMA user_version = 9", "PRAGMA query_only = OFF",
                          "PRAGMA writable_schema = ON", "PRAGMA journal_mode = DELETE", "PRAGMA optimize",
                          "PRAGMA wal_checkpoint", "REINDEX", "ANALYZE", "VACUUM", "VACUUM INTO '/tmp/egm_vacuum.sqlite'",
                          "ATTACH DATABASE '/tmp/egm_attach.sqlite' AS a", "DETACH a", "BEGIN", "SAVEPOINT s",
                          "PRAGMA temp_store_directory = '/tmp'"}) {
    Connection c(path_, OpenMode::read_only);
    try {
      prepare_read_only_query(c, sql);
      ADD_FAILURE() << "passed the gate: " << sql;
    } catch (const egm::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("egm query is read-only"), std::string::npos) << sql << ": " << e.what();
    } catch (const egm::DbError& e) {
      ADD_FAILURE() << sql << ": a DbError, not the gate's refusal: " << e.what();
    }
  }
  // Allowed to the authorizer for eponymous virtual tables; SQLite itself refuses it.
  Connection c(path_, OpenMode::read_only);
  EXPECT_THROW(prepare_read_only_query(c, "UPDATE sqlite_master SET sql = ''"), egm::Error);
  EXPECT_TRUE(FileSnapshot::of(path_).same_as(before));
}

// Issue 29: the refusal names the statement kind refused, not SQLite's
// bookkeeping (a DROP TABLE deletes its row from sqlite_master).
TEST_F(ReadOnlyQuery, RefusalNamesTheStatementKind) {
  const std::pair<const char*, const char*> cases[] = {
      {"DROP TABLE cells", "DROP TABLE is not allowed"},
      {"CREATE TABLE t(x)", "CREATE TABLE is not allowed"},
      {"  /* c */ create temp table t(x)", "CREATE TABLE is not allowed"},
      {"CREATE INDEX i ON cells(seed)", "CREATE INDEX is not allowed"},
      {"CREATE VIEW v AS SELECT 1", "CREATE VIEW is not allowed"},
      {"DROP VIEW cell_results", "DROP VIEW is not allowed"},
      {"DELETE FROM cells", "DELETE is not allowed"},
      {"INSERT INTO events(kind) VALUES ('x')", "INSERT is not allowed"},
      {"UPDATE cells SET seed = 1", "UPDATE is not allowed"},
      {"ALTER TABLE cells ADD COLUMN z", "ALTER TABLE is not allowed"},
  };
  for (const auto& [sql, expected] : cases) {
    Connection c(path_, OpenMode::read_only);
    try {
      prepare_read_only_query(c, sql);
      ADD_FAILURE() << "passed the gate: " << sql;
    } catch (const egm::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << sql << ": " << e.what();
    } catch (const egm::DbError& e) {
      ADD_FAILURE() << sql << ": a DbError: " << e.what();
    }
  }
}

TEST_F(ReadOnlyQuery, NoValueLargerThanTheLimitIsBuilt) {
  Connection c(path_, OpenMode::read_only);
  for (const char* sql : {"SELECT zeroblob(1000000000)", "SELECT randomblob(100000000)"}) {
    Statement s = prepare_read_only_query(c, sql);
    EXPECT_THROW(s.run(), egm::DbError) << sql;  // "string or blob too big", not a gigabyte
  }
}

TEST_F(ReadOnlyQuery, SqlSQLiteRejectsKeepsItsMessageAndTheGateNeedsAReadOnlyConnection) {
  Connection c(path_, OpenMode::read_only);
  EXPECT_THROW(prepare_read_only_query(c, "SELEC 1"), egm::DbError);
  EXPECT_THROW(prepare_read_only_query(c, "SELECT 1; SELECT 2"), egm::DbError);
  EXPECT_THROW(prepare_read_only_query(c, "SELECT 1; DELETE FROM cells"), egm::Error);
  EXPECT_THROW(prepare_read_only_query(c, ""), egm::DbError);
  // The authorizer is removed afterwards: the connection still reads.
  EXPECT_NO_THROW(c.prepare("SELECT 1").run());
  Connection writable(path_, OpenMode::read_write);
  EXPECT_THROW(prepare_read_only_query(writable, "SELECT 1"), egm::Error);
}

}  // namespace
