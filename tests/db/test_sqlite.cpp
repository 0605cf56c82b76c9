// The RAII SQLite layer and the schema migrations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "db/migrations.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "test_helpers.h"
#include "util/error.h"
#include "util/files.h"

namespace {

using namespace egm::db;
using egm::testing::FileSnapshot;
using egm::testing::ScratchDir;

// A file of an older schema: the first `version` migrations only.
int migrate_first(Connection& c, int version) {
  const auto& all = results_migrations();
  return migrate(c, {all.begin(), all.begin() + version});
}

// Sweep 'old' (id 1) and its cell base-s0 (id 1) as an older schema stored them: the
// columns every version has, then `more_columns` set to `more_values` (SQL literals).
void insert_old_cell(Connection& c, const std::string& more_columns, const std::string& more_values) {
  c.execute("INSERT INTO sweeps (name, spec_json, spec_hash, created_at, updated_at) VALUES ('old', '{}', 'h', 1, 1)");
  const auto in = egm::testing::make_cell("base", 0);
  c.execute("INSERT INTO cells (sweep_id, position, key, variant, seed, config_json, config_hash, max_steps, "
            "max_attempts, updated_at, " + more_columns + ") " +
                "VALUES (1, 0, ?, ?, ?, ?, ?, ?, ?, 1, " + more_values + ")",
            in.key, in.variant, in.seed, in.config_json, in.config_hash, in.max_steps, in.max_attempts);
}

std::set<std::string> table_names(Connection& c) {
  std::set<std::string> names;
  Statement s = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
  while (s.step()) names.insert(s.text(0));
  return names;
}

TEST(Sqlite, TypedBindAndColumns) {
  ScratchDir dir;
  Connection c(dir.file("t.sqlite"), OpenMode::read_write_create);
  c.exec("CREATE TABLE t (i INTEGER, r REAL, s TEXT, n TEXT)");
  c.execute("INSERT INTO t VALUES (?, ?, ?, ?)", int64_t{1} << 40, 0.25, std::string("it's"), std::optional<std::string>());
  Statement s = c.prepare("SELECT i, r, s, n FROM t");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.int64(0), int64_t{1} << 40);
  EXPECT_EQ(s.real(1), 0.25);
  EXPECT_EQ(s.text(2), "it's");
  EXPECT_TRUE(s.is_null(3));
  EXPECT_FALSE(s.opt_text(3).has_value());
  EXPECT_EQ(s.column_name(2), "s");
  EXPECT_TRUE(std::holds_alternative<double>(s.value(1)));
  EXPECT_FALSE(s.step());
}

TEST(Sqlite, ErrorsCarryMessageAndSql) {
  ScratchDir dir;
  Connection c(dir.file("t.sqlite"), OpenMode::read_write_create);
  try {
    c.prepare("SELECT * FROM no_such_table");
    FAIL() << "no throw";
  } catch (const egm::DbError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no such table: no_such_table"), std::string::npos) << what;
    EXPECT_NE(what.find("SQL: SELECT * FROM no_such_table"), std::string::npos) << what;
    EXPECT_NE(what.find(dir.file("t.sqlite")), std::string::npos) << what;
  }
  // One statement per prepare: a second one is refused, not silently dropped.
  EXPECT_THROW(c.prepare("SELECT 1; SELECT 2"), egm::DbError);
  EXPECT_NO_THROW(c.prepare("SELECT 1; -- trailing comment"));
}

TEST(Sqlite, TransactionRollsBackUnlessCommitted) {
  ScratchDir dir;
  Connection c(dir.file("t.sqlite"), OpenMode::read_write_create);
  c.exec("CREATE TABLE t (x INTEGER)");
  {
    Transaction tx(c);
    c.execute("INSERT INTO t VALUES (1)");
  }  // no commit
  {
    Transaction tx(c);
    c.execute("INSERT INTO t VALUES (2)");
    {
      Transaction inner(c);  // a savepoint inside the outer transaction
      c.execute("INSERT INTO t VALUES (3)");
    }  // inner rolled back, outer goes on
    tx.commit();
  }
  Table t = query_table(c, "SELECT x FROM t ORDER BY x");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][0]), 2);
  EXPECT_FALSE(c.in_transaction());
}

TEST(Sqlite, ReadOnlyConnectionRefusesWritesAndLeavesFileUnchanged) {
  ScratchDir dir;
  const std::string path = dir.file("r.sqlite");
  { ResultsDb db(path, OpenMode::read_write_create); db.create_or_load_sweep("s", "{}", "h", false); }
  const FileSnapshot before = FileSnapshot::of(path);
  {
    Connection ro(path, OpenMode::read_only);
    EXPECT_THROW(ro.execute("INSERT INTO sweeps (name, spec_json, spec_hash, created_at, updated_at) "
                            "VALUES ('x', '{}', 'h', 0, 0)"),
                 egm::DbError);
    EXPECT_THROW(ro.execute("DELETE FROM sweeps"), egm::DbError);
    EXPECT_THROW(ro.exec("DROP TABLE events"), egm::DbError);
    EXPECT_THROW(ro.exec("PRAGMA user_version = 7"), egm::DbError);
    Statement s = ro.prepare("DELETE FROM sweeps");
    EXPECT_FALSE(s.read_only());
    EXPECT_TRUE(ro.prepare("SELECT count(*) FROM sweeps").read_only());
    Statement count = ro.prepare("SELECT count(*) FROM sweeps");
    ASSERT_TRUE(count.step());
    EXPECT_EQ(count.int64(0), 1);
  }
  EXPECT_TRUE(FileSnapshot::of(path).same_as(before));
}

TEST(Sqlite, ReadOnlyOpenOfMissingFileFailsAndCreatesNothing) {
  ScratchDir dir;
  const std::string path = dir.file("missing.sqlite");
  EXPECT_THROW(Connection(path, OpenMode::read_only), egm::DbError);
  EXPECT_THROW(Connection(path, OpenMode::read_write), egm::DbError);
  EXPECT_THROW(ResultsDb(path, OpenMode::read_only), egm::DbError);
  EXPECT_FALSE(std::filesystem::exists(path));
}

// ---- migrations ------------------------------------------------------------------

int count_markers_in_schema_file() {
  std::ifstream in(std::string(EGM_SOURCE_DIR) + "/schemas/results.sql");
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (line.rfind("-- @migration ", 0) == 0) ++n;
  return n;
}

TEST(Migrations, EmbeddedSchemaIsTheSourceFile) {
  EXPECT_EQ(std::string(results_schema_sql()),
            egm::read_file(std::string(EGM_SOURCE_DIR) + "/schemas/results.sql"));
  EXPECT_EQ(results_schema_version(), count_markers_in_schema_file());
  EXPECT_EQ(results_migrations().front().description, "initial schema");
}

TEST(Migrations, NewFileGetsCurrentSchemaWalAndForeignKeys) {
  ScratchDir dir;
  ResultsDb db(dir.file("new.sqlite"), OpenMode::read_write_create);
  Connection& c = db.connection();
  EXPECT_EQ(c.user_version(), results_schema_version());
  const std::set<std::string> expected = {"sweeps",          "cells",  "runs",         "metrics",      "param_layouts",
                                          "param_snapshots", "events", "source_diffs", "merge_sources", "looks"};
  EXPECT_EQ(table_names(c), expected);
  // Learned parameters are packed (schema v5); `params` reads them as rows.
  Statement view = c.prepare("SELECT type FROM sqlite_master WHERE name = 'params'");
  ASSERT_TRUE(view.step());
  EXPECT_EQ(view.text(0), "view");
  Statement jm = c.prepare("PRAGMA journal_mode");
  ASSERT_TRUE(jm.step());
  EXPECT_EQ(jm.text(0), "wal");
  Statement fk = c.prepare("PRAGMA foreign_keys");
  ASSERT_TRUE(fk.step());
  EXPECT_EQ(fk.int64(0), 1);
  // A cell must belong to a sweep: the foreign key is enforced.
  EXPECT_THROW(db.ensure_cells(42, {egm::testing::make_cell("base", 0)}), egm::DbError);
}

TEST(Migrations, EmptyVersionZeroFileIsMigrated) {
  ScratchDir dir;
  const std::string path = dir.file("empty.sqlite");
  egm::atomic_write_file(path, "");  // a v0 database: an empty file
  {
    Connection c(path, OpenMode::read_write);
    EXPECT_EQ(c.user_version(), 0);
  }
  ResultsDb db(path, OpenMode::read_write);
  EXPECT_EQ(db.connection().user_version(), results_schema_version());
  EXPECT_EQ(table_names(db.connection()).count("cells"), 1u);
}

TEST(Migrations, LaterVersionAppliesOnTopAndKeepsData) {
  ScratchDir dir;
  const std::string path = dir.file("v1.sqlite");
  {
    ResultsDb db(path, OpenMode::read_write_create);
    auto sweep = db.create_or_load_sweep("s", "{}", "h", false);
    db.ensure_cells(sweep.sweep.id, {egm::testing::make_cell("base", 0), egm::testing::make_cell("ega", 0)});
  }
  // next = the shipped migrations plus one more section, as a future release would add.
  const int next = results_schema_version() + 1;
  const std::string v2_script = std::string(results_schema_sql()) + "\n-- @migration " + std::to_string(next) +
                                ": a note per cell\nALTER TABLE cells ADD COLUMN note TEXT;\n";
  const std::vector<Migration> v2 = parse_migrations(v2_script);
  ASSERT_EQ(v2.size(), results_migrations().size() + 1);
  {
    Connection c(path, OpenMode::read_write);
    EXPECT_EQ(migrate(c, v2), 1);
    EXPECT_EQ(c.user_version(), next);
    EXPECT_EQ(migrate(c, v2), 0);  // idempotent
    Table t = query_table(c, "SELECT variant, note FROM cells ORDER BY position");
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(std::get<std::string>(t.rows[1][0]), "ega");
    EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[1][1]));
  }
  // This binary does not know the next version: such a file is refused, for reading and writing.
  EXPECT_THROW(ResultsDb(path, OpenMode::read_only), egm::DbError);
  try {
    ResultsDb db(path, OpenMode::read_write);
    FAIL() << "no throw";
  } catch (const egm::DbError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

// A file written by an egm before the heartbeat (schema v1) stays readable by
// the read-only verbs, and the coordinator upgrades it with its rows intact.
TEST(Migrations, VersionOneFileIsReadableAndUpgraded) {
  ScratchDir dir;
  const std::string path = dir.file("v1.sqlite");
  {
    Connection c(path, OpenMode::read_write_create);
    EXPECT_EQ(migrate(c, {results_migrations().front()}), 1);
    c.execute("INSERT INTO sweeps (name, spec_json, spec_hash, created_at, updated_at, status) "
              "VALUES ('old', '{}', 'h', 1, 1, 'running')");
  }
  {
    ResultsDb reader(path, OpenMode::read_only);
    EXPECT_EQ(reader.schema_version(), 1);
    const auto sweeps = reader.list_sweeps();
    ASSERT_EQ(sweeps.size(), 1u);
    EXPECT_EQ(sweeps[0].status, SweepStatus::running);
    EXPECT_FALSE(sweeps[0].heartbeat_at.has_value());
    EXPECT_FALSE(stale_since(sweeps[0], 1e12).has_value());  // no heartbeat: nothing to judge by
    EXPECT_EQ(reader.sweep_progress(sweeps[0].id).total, 0);
  }
  ResultsDb db(path, OpenMode::read_write);
  EXPECT_EQ(db.schema_version(), results_schema_version());
  db.heartbeat(db.list_sweeps()[0].id);
  EXPECT_TRUE(db.list_sweeps()[0].heartbeat_at.has_value());
}

// A file written before grids (schema v2) stays readable by the read-only
// verbs (its cells have no grid point), and a sweep in it resumes after the
// upgrade: its cells are found by key.
TEST(Migrations, VersionTwoFileCellsAreReadableAndResume) {
  ScratchDir dir;
  const std::string path = dir.file("v2.sqlite");
  int64_t sweep_id = 0, cell_id = 0;
  {
    Connection c(path, OpenMode::read_write_create);
    EXPECT_EQ(migrate_first(c, 2), 2);
    insert_old_cell(c, "status, final_val", "'done', 1.5");
    sweep_id = 1;
    cell_id = c.last_insert_rowid();
  }
  {
    ResultsDb reader(path, OpenMode::read_only);
    EXPECT_EQ(reader.schema_version(), 2);
    const auto cells = reader.list_cells();
    ASSERT_EQ(cells.size(), 1u);
    EXPECT_FALSE(cells[0].grid_point.has_value());
    EXPECT_FALSE(cells[0].grid_json.has_value());
    EXPECT_EQ(cells[0].results.final_val, std::optional<double>(1.5));
  }
  ResultsDb db(path, OpenMode::read_write);
  EXPECT_EQ(db.schema_version(), results_schema_version());
  EXPECT_EQ(db.ensure_cells(sweep_id, {egm::testing::make_cell("base", 0)}), std::vector<int64_t>{cell_id});
  EXPECT_EQ(db.cells_to_run(sweep_id).size(), 0u);
}

// A file written before source provenance (schema v5): its runs read without
// a diff sha and --show-diff's lookup finds none; after the upgrade a run
// records the sha, and the diff text is stored once per sha.
TEST(Migrations, VersionFiveRunsReadWithoutASourceDiff) {
  ScratchDir dir;
  const std::string path = dir.file("v5.sqlite");
  {
    Connection c(path, OpenMode::read_write_create);
    EXPECT_EQ(migrate_first(c, 5), 5);
    insert_old_cell(c, "attempts, status", "1, 'interrupted'");
    c.execute("INSERT INTO runs (cell_id, attempt, status, host, device, world_size, backend, git_commit, started_at) "
              "VALUES (1, 1, 'interrupted', 'h', 'cpu', 1, 'none', 'abc-dirty', 1)");
  }
  {
    ResultsDb reader(path, OpenMode::read_only);
    EXPECT_EQ(reader.schema_version(), 5);
    const auto runs = reader.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_FALSE(runs[0].info.source_diff_sha256);
    EXPECT_FALSE(reader.source_diff("anything"));
  }
  ResultsDb db(path, OpenMode::read_write);
  const std::string sha(64, 'b');
  db.store_source_diff({sha, 12, "diff --git a"});
  db.store_source_diff({sha, 12, "ignored: the sha is the key"});
  RunInfo info;
  info.source_diff_sha256 = sha;
  const int64_t run = db.start_attempt(1, info);
  EXPECT_EQ(db.run(run).attempt, 2);
  EXPECT_EQ(db.run(run).info.source_diff_sha256, std::optional<std::string>(sha));
  const auto stored = db.source_diff(sha);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->diff, "diff --git a");
  EXPECT_EQ(stored->size, 12);
  EXPECT_FALSE(stored->truncated());
}

// A file written before runs recorded their threads and GPU (schema v5, before
// v7): the read-only verbs list its runs without them; the upgrade adds the
// columns (NULL for the old run) and the typed views, whose compute counts the
// old run at one thread.
TEST(Migrations, VersionFiveRunsReadWithoutThreads) {
  ScratchDir dir;
  const std::string path = dir.file("v5.sqlite");
  {
    Connection c(path, OpenMode::read_write_create);
    EXPECT_EQ(migrate_first(c, 5), 5);
    insert_old_cell(c, "status", "'done'");
    c.execute("INSERT INTO runs (cell_id, attempt, status, host, device, world_size, started_at, ended_at) "
              "VALUES (1, 1, 'done', 'h', 'cpu', 2, 100, 130)");
  }
  {
    ResultsDb reader(path, OpenMode::read_only);
    EXPECT_EQ(reader.schema_version(), 5);
    const auto runs = reader.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_FALSE(runs[0].info.threads.has_value());
    EXPECT_FALSE(runs[0].info.gpu_name.has_value());
  }
  ResultsDb db(path, OpenMode::read_write);
  EXPECT_EQ(db.schema_version(), results_schema_version());
  EXPECT_FALSE(db.list_runs().at(0).info.threads.has_value());
  Statement q = db.connection().prepare("SELECT seconds, core_seconds, gpu_seconds, variant FROM run_compute");
  ASSERT_TRUE(q.step());
  EXPECT_EQ(q.real(0), 30.0);
  EXPECT_EQ(q.real(1), 60.0);  // 30 s x 2 ranks x 1 thread
  EXPECT_TRUE(q.is_null(2));
  EXPECT_EQ(q.text(3), "base");
}

// A file written before events had a step (schema v3): the read-only verbs
// list its events without one; the upgrade fills the step in from the text the
// old messages carried (and leaves it NULL where they carried none); a kind
// egm does not know is an error naming it, not a default.
TEST(Migrations, VersionThreeFileEventsGetTheirStep) {
  ScratchDir dir;
  const std::string path = dir.file("v3.sqlite");
  {
    Connection c(path, OpenMode::read_write_create);
    EXPECT_EQ(migrate_first(c, 3), 3);
    c.execute("INSERT INTO sweeps (name, spec_json, spec_hash, created_at, updated_at) VALUES ('old', '{}', 'h', 1, 1)");
    const char* events[][2] = {
        {"sweep_created", "sweep 'old' created"},
        {"attempt_started", "base-s0 attempt 2 on h cpu (world size 1), resumed from step 40"},
        {"resumed", "resumed from the latest checkpoint (step 40): /r/checkpoint.egmc"},
        {"checkpoint", "checkpoint at step 60"},
        {"attempt_interrupted", "base-s0 attempt 2 interrupted: interrupted by SIGUSR2 (time-limit warning) at step 70; "
                                "checkpointed"},
        {"attempt_started", "base-s0 attempt 3 on h cpu (world size 1)"},
    };
    for (const auto& e : events)
      c.execute("INSERT INTO events (time, sweep_id, kind, message) VALUES (1, 1, ?, ?)", std::string(e[0]),
                std::string(e[1]));
  }
  {
    ResultsDb reader(path, OpenMode::read_only);
    EXPECT_EQ(reader.schema_version(), 3);
    const auto events = reader.list_events(std::nullopt);
    ASSERT_EQ(events.size(), 6u);
    EXPECT_EQ(events[3].kind, EventKind::checkpoint);
    for (const auto& e : events) EXPECT_FALSE(e.step.has_value()) << e.message;
  }
  {
    ResultsDb db(path, OpenMode::read_write);
    EXPECT_EQ(db.schema_version(), results_schema_version());
    const auto events = db.list_events(std::nullopt);
    ASSERT_EQ(events.size(), 6u);
    const std::optional<int64_t> none;
    const std::vector<std::optional<int64_t>> steps = {none, 40, 40, 60, 70, none};
    for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].step, steps[i]) << events[i].message;
    for (int i = 0; i <= static_cast<int>(EventKind::run_reused); ++i)
      EXPECT_EQ(parse_event_kind(to_string(static_cast<EventKind>(i))), static_cast<EventKind>(i));
    db.connection().execute("INSERT INTO events (time, kind, message) VALUES (2, 'no_such_kind', 'x')");
    try {
      db.list_events(std::nullopt);
      ADD_FAILURE() << "an unknown event kind was read";
    } catch (const egm::DbError& e) {
      EXPECT_NE(std::string(e.what()).find("unknown event kind 'no_such_kind'"), std::string::npos) << e.what();
    }
  }
}

// A file written at schema 11, when a link held a copy of its original's rows:
// after the upgrade to 12 the link reads its original's rows through
// row_sources (its own copies are left unread, not counted twice), under its
// own run.
TEST(Migrations, VersionElevenLinksReadThroughAfterTheUpgrade) {
  ScratchDir dir;
  const std::string path = dir.file("v11.sqlite");
  {
    Connection c(path, OpenMode::read_write_create);
    EXPECT_EQ(migrate_first(c, 11), 11);
    insert_old_cell(c, "status, final_val", "'done', 2.5");  // cell 1, sweep 1: the original
    c.execute("INSERT INTO cells (sweep_id, position, key, variant, seed, config_json, config_hash, max_steps, "
              "max_attempts, updated_at, status, final_val) VALUES (1, 1, 'base-s0-again', 'base', 0, '{}', 'h2', "
              "100, 2, 1, 'done', 2.5)");  // cell 2: the link
    c.execute("INSERT INTO runs (cell_id, attempt, status, host, started_at, ended_at, numerics_version) "
              "VALUES (1, 1, 'done', 'h', 1, 2, 1)");
    c.execute("INSERT INTO runs (cell_id, attempt, status, host, started_at, ended_at, numerics_version, "
              "reused_run, reused_from) VALUES (2, 1, 'done', 'h', 3, 3, 1, 1, 'run 1 of sweep old')");
    // The original's point, and the link's copy under its own run (a loss no reader may show:
    // the copy is left unread).
    for (int64_t cell : {1, 2})
      c.execute("INSERT INTO metrics (cell_id, run_id, step, split, loss, time) VALUES (?, ?, 10, 'eval_val', ?, 1)",
                cell, cell, cell == 1 ? 2.5 : 9.5);
  }
  ResultsDb db(path, OpenMode::read_write);
  ASSERT_EQ(db.schema_version(), 12);
  Statement points = db.connection().prepare(
      "SELECT group_concat(cell_id || '|' || run_id || '|' || step || '|' || loss, ';') FROM "
      "(SELECT * FROM metric_points ORDER BY cell_id, step)");
  ASSERT_TRUE(points.step());
  EXPECT_EQ(points.text(0), "1|1|10|2.5;2|2|10|2.5");
  Statement sources = db.connection().prepare(
      "SELECT group_concat(cell_id || '>' || rows_cell_id || '@' || coalesce(link_run_id, '-'), ' ') FROM "
      "(SELECT * FROM row_sources ORDER BY cell_id)");
  ASSERT_TRUE(sources.step());
  EXPECT_EQ(sources.text(0), "1>1@- 2>1@2");
}

TEST(Migrations, RefusesForeignDatabasesAndGarbage) {
  ScratchDir dir;
  const std::string foreign = dir.file("foreign.sqlite");
  { Connection c(foreign, OpenMode::read_write_create); c.exec("CREATE TABLE mine (x)"); }
  EXPECT_THROW(ResultsDb(foreign, OpenMode::read_write), egm::DbError);
  const std::string garbage = dir.file("garbage.sqlite");
  egm::atomic_write_file(garbage, std::string(4096, 'x'));
  EXPECT_THROW(ResultsDb(garbage, OpenMode::read_write), egm::DbError);
  EXPECT_EQ(egm::read_file(garbage), std::string(4096, 'x'));
}

TEST(Migrations, ParserChecksNumbering) {
  EXPECT_THROW(parse_migrations("-- @migration 1: a\nCREATE TABLE a (x);\n-- @migration 3: c\nCREATE TABLE c (x);\n"),
               egm::DbError);
  EXPECT_THROW(parse_migrations("CREATE TABLE a (x);\n"), egm::DbError);
  EXPECT_THROW(parse_migrations("-- @migration 1: nothing\n-- just a comment\n"), egm::DbError);
  auto m = parse_migrations("-- header\n-- @migration 1: first\nCREATE TABLE a (x);\n-- @migration 2: second\nSELECT 1;\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].version, 2);
  EXPECT_EQ(m[1].description, "second");
  EXPECT_EQ(m[0].sql, "CREATE TABLE a (x);\n");
}

}  // namespace
