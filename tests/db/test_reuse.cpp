// Reuse of finished runs in the db layer (src/db/reuse.h), on databases
// written through ResultsDb: a cell links to a finished run of the same
// identity (config, corpus, device kind, world size, numerics version) in
// another sweep and takes its results, metrics and parameter snapshots; any
// other identity, a failed, interrupted or running original, or an unknown
// numerics version or corpus links nothing; a link of a link names the
// original; the compute-facing reader gives the original's cost. The real
// binaries: tests/sweep/sweep_reuse.sh and sweep_reuse_kill_resume.sh.
#include "db/reuse.h"

#include <gtest/gtest.h>

#include "db/migrations.h"
#include "db/sqlite.h"
#include "test_helpers.h"

namespace egm::db {
namespace {

using egm::testing::make_cell;
using egm::testing::ScratchDir;

constexpr const char* kCorpus = "c0ffee";

// Sweep `name` with cells base-s0 and ega-s0 (the same made-up configs in every sweep).
int64_t add_sweep(ResultsDb& db, const std::string& name) {
  const int64_t id = db.create_or_load_sweep(name, "{}", "hash-" + name, ChangedSpec::refuse).sweep.id;
  db.ensure_cells(id, {make_cell("base", 0), make_cell("ega", 0)});
  db.set_sweep_corpus(id, SweepCorpus{kCorpus, 10, "/data/input.txt"});
  return id;
}

CellRow cell_of(ResultsDb& db, int64_t sweep, const std::string& key) {
  CellFilter f;
  f.sweep_id = sweep;
  for (const CellRow& c : db.list_cells(f))
    if (c.key == key) return c;
  ADD_FAILURE() << "no cell " << key;
  return {};
}

// Trains (as the coordinator records it) one cell of `sweep` to `status`.
int64_t train(ResultsDb& db, int64_t sweep, const std::string& key, RunStatus status = RunStatus::done,
              const std::string& device = "cpu", int world = 1, std::optional<int64_t> numerics = 1) {
  const CellRow c = cell_of(db, sweep, key);
  RunInfo info;
  info.host = "node-a";
  info.device = parse_device_name(device, "");
  info.world_size = world;
  info.git_commit = "0123456789ab";
  info.threads = 2;
  info.numerics_version = numerics;
  const int64_t run = db.start_attempt(c.id, info);
  db.record_metrics({{c.id, run, 10, MetricSplit::eval_val, 2.25, 1e-3, 100.0, 1.0}});
  db.record_params({{c.id, run, 10, "mope", -1, 0, "sigma", 3.5}});
  if (status == RunStatus::running) return run;
  Measurements m;
  m.final_val = 2.25;
  m.full_val = 2.5;
  db.finish_attempt(run, status, status == RunStatus::failed ? "boom" : "", m, {}, /*step=*/10);
  // A known duration for the compute reader: 100 s of wall time.
  db.connection().execute("UPDATE runs SET started_at = 1000, ended_at = 1100 WHERE id = ?", run);
  return run;
}

ReuseLaunch cpu_launch(int64_t numerics = 1, const std::string& corpus = kCorpus) {
  return ReuseLaunch{corpus, "cpu", numerics, [](const std::string&) { return 1; }};
}

// Sweep a with base-s0 trained (`original`), then sweep b, whose base-s0 may take it.
struct TrainedThenAgain {
  ScratchDir dir;
  ResultsDb db{dir.file("r.sqlite"), OpenMode::read_write_create};
  int64_t a = add_sweep(db, "a");
  int64_t original = train(db, a, "base-s0");
  int64_t b = add_sweep(db, "b");
};

TEST(Reuse, LinksAFinishedRunOfTheSameIdentityAndReadsWhatItMeasured) {
  TrainedThenAgain f;
  ResultsDb& db = f.db;
  const int64_t original = f.original, b = f.b;
  const std::vector<ReuseLink> links = link_reusable_cells(db, b, cpu_launch());
  ASSERT_EQ(links.size(), 1u);  // ega-s0 was never trained
  EXPECT_EQ(links[0].key, "base-s0");
  EXPECT_EQ(links[0].original_run, original);
  EXPECT_EQ(links[0].from, "run " + std::to_string(original) + " of sweep 'a', cell base-s0, trained on node-a");

  const CellRow linked = cell_of(db, b, "base-s0");
  EXPECT_EQ(linked.status, CellStatus::done);
  EXPECT_EQ(linked.results.final_val, std::optional<double>(2.25));
  EXPECT_EQ(linked.results.full_val, std::optional<double>(2.5));
  EXPECT_EQ(linked.final_step, std::optional<int64_t>(10));
  EXPECT_EQ(cell_of(db, b, "ega-s0").status, CellStatus::pending);
  // Its own runs row: done, no wall time, what ran the original, where it came from.
  const RunRow run = db.run(links[0].run_id);
  EXPECT_EQ(run.cell_id, linked.id);
  EXPECT_EQ(run.status, RunStatus::done);
  EXPECT_EQ(run.ended_at, std::optional<double>(run.started_at));
  EXPECT_EQ(run.info.host, "node-a");
  EXPECT_EQ(run.info.threads, std::optional<int64_t>(2));
  EXPECT_EQ(run.reused_from, std::optional<std::string>(links[0].from));
  // The original's metrics and parameter snapshot, now the linked cell's: read
  // through (the views), stored once (the tables hold none under the link).
  Statement m = db.connection().prepare(
      "SELECT count(*), min(loss), min(run_id) FROM metric_points WHERE cell_id = ?");
  m.bind(1, linked.id);
  ASSERT_TRUE(m.step());
  EXPECT_EQ(m.int64(0), 1);
  EXPECT_EQ(m.real(1), 2.25);
  EXPECT_EQ(m.int64(2), links[0].run_id);
  Statement p = db.connection().prepare("SELECT value, run_id FROM params WHERE cell_id = ?");
  p.bind(1, linked.id);
  ASSERT_TRUE(p.step());
  EXPECT_EQ(p.real(0), 3.5);
  EXPECT_EQ(p.int64(1), links[0].run_id);
  Statement stored = db.connection().prepare(
      "SELECT (SELECT count(*) FROM metrics WHERE cell_id = ?1) + (SELECT count(*) FROM param_snapshots WHERE "
      "cell_id = ?1)");
  stored.bind(1, linked.id);
  ASSERT_TRUE(stored.step());
  EXPECT_EQ(stored.int64(0), 0);
  // Nothing is left to run there, and a second start links nothing again.
  EXPECT_TRUE(link_reusable_cells(db, b, cpu_launch()).empty());
  // What the verbs show, and what the compute statement reads.
  const std::vector<ReusedCell> reused = reused_cells(db, b);
  ASSERT_EQ(reused.size(), 1u);
  EXPECT_EQ(reused[0].original_run, std::optional<int64_t>(original));
  EXPECT_EQ(reused[0].original_sweep, std::optional<std::string>("a"));
  EXPECT_EQ(reused[0].original_seconds, std::optional<double>(100));
  EXPECT_EQ(reused[0].original_threads, std::optional<int64_t>(2));
  EXPECT_EQ(reuse_line(reused, 2), "1 of 2 cells reused from earlier runs (sweep 'a': 1)");
  EXPECT_EQ(reuse_line({}, 2), "");
}

TEST(Reuse, ALinkOfALinkNamesTheOriginal) {
  TrainedThenAgain f;
  ResultsDb& db = f.db;
  const int64_t original = f.original, b = f.b;
  ASSERT_EQ(link_reusable_cells(db, b, cpu_launch()).size(), 1u);
  // The original's cell in a is what c finds first (trained before links);
  // with the original gone from the candidates' front, the link still leads to it.
  const int64_t c = add_sweep(db, "c");
  const std::vector<ReuseLink> links = link_reusable_cells(db, c, cpu_launch());
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].original_run, original);
  db.connection().execute("UPDATE runs SET reused_from = 'x' WHERE id = ?", original);  // now a only looks like a link
  const int64_t d = add_sweep(db, "d");
  const std::vector<ReuseLink> again = link_reusable_cells(db, d, cpu_launch());
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(db.run(again[0].run_id).reused_from, std::optional<std::string>("x"));
  // The run it names is not in the file (reused_run NULL): the link holds a
  // copy of the rows, stored under its own cell and run.
  EXPECT_EQ(again[0].original_run, 0);
  Statement copied = db.connection().prepare(
      "SELECT (SELECT count(*) FROM metrics WHERE cell_id = ?1 AND run_id = ?2 AND loss = 2.25), "
      "(SELECT count(*) FROM param_snapshots WHERE cell_id = ?1 AND run_id = ?2)");
  copied.bind(1, again[0].cell_id);
  copied.bind(2, again[0].run_id);
  ASSERT_TRUE(copied.step());
  EXPECT_EQ(copied.int64(0), 1);
  EXPECT_EQ(copied.int64(1), 1);
}

TEST(Reuse, OnlyTheSameIdentityOfAFinishedRunMatches) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t a = add_sweep(db, "a");
  train(db, a, "base-s0", RunStatus::done, "cuda:1", /*world=*/2);
  train(db, a, "ega-s0", RunStatus::done, "cpu", 1, /*numerics=*/std::nullopt);
  const int64_t b = add_sweep(db, "b");
  auto world = [](int w) { return [w](const std::string&) { return w; }; };
  // Another device kind, another world size, another numerics version, another corpus: nothing.
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{kCorpus, "cpu", 1, world(2)}).empty());
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{kCorpus, "cuda", 1, world(1)}).empty());
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{kCorpus, "cuda", 2, world(2)}).empty());
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{"other", "cuda", 1, world(2)}).empty());
  // A launch whose own identity is not known (no corpus, no numerics version) matches nothing.
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{"", "cuda", 1, world(2)}).empty());
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{"unknown", "cuda", 1, world(2)}).empty());
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{kCorpus, "cuda", 0, world(2)}).empty());
  // ega-s0's run has no numerics version (an older egm, another build): never matched.
  EXPECT_TRUE(link_reusable_cells(db, b, ReuseLaunch{kCorpus, "cpu", 1, world(1)}).empty());
  // The same identity: the device index does not matter, the kind does.
  const std::vector<ReuseLink> links = link_reusable_cells(db, b, ReuseLaunch{kCorpus, "cuda", 1, world(2)});
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].key, "base-s0");
}

TEST(Reuse, AFailedInterruptedOrRunningOriginalIsNotReused) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t a = add_sweep(db, "a");
  train(db, a, "base-s0", RunStatus::failed);
  train(db, a, "ega-s0", RunStatus::running);
  const int64_t b = add_sweep(db, "b");
  EXPECT_TRUE(link_reusable_cells(db, b, cpu_launch()).empty());
  const int64_t c = add_sweep(db, "c");
  train(db, c, "base-s0", RunStatus::interrupted);
  EXPECT_TRUE(link_reusable_cells(db, b, cpu_launch()).empty());
  EXPECT_TRUE(reused_cells(db, b).empty());
}

TEST(Reuse, AnInterruptedCellHereTakesTheOriginalsTrajectory) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t a = add_sweep(db, "a");
  const int64_t b = add_sweep(db, "b");
  // b's base-s0 was started by a coordinator that died (left running, with a metric at step 5).
  const CellRow mine = cell_of(db, b, "base-s0");
  const int64_t stale = db.start_attempt(mine.id, RunInfo{});
  db.record_metrics({{mine.id, stale, 5, MetricSplit::train, 4.0, 1e-3, 100.0, 1.0}});
  train(db, a, "base-s0");
  const std::vector<ReuseLink> links = link_reusable_cells(db, b, cpu_launch());
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(db.run(stale).status, RunStatus::interrupted);
  EXPECT_EQ(db.run(links[0].run_id).attempt, 2);
  Statement m = db.connection().prepare("SELECT count(*), max(step) FROM metric_points WHERE cell_id = ?");
  m.bind(1, mine.id);
  ASSERT_TRUE(m.step());
  EXPECT_EQ(m.int64(0), 1);   // the original's one point, not the stale attempt's
  EXPECT_EQ(m.int64(1), 10);
  Statement stale_rows = db.connection().prepare("SELECT count(*) FROM metrics WHERE cell_id = ?");
  stale_rows.bind(1, mine.id);
  ASSERT_TRUE(stale_rows.step());
  EXPECT_EQ(stale_rows.int64(0), 0);  // the stale attempt's point is gone
}

// A database from before v11 is upgraded and read as it is: its runs have no
// numerics version, so none of them stands for a cell (nothing says that training
// still computes what it computed then).
TEST(Reuse, AnOlderDatabasesRunsMatchNothing) {
  ScratchDir dir;
  const std::string path = dir.file("v10.sqlite");
  {
    Connection c(path, OpenMode::read_write_create);
    std::vector<Migration> v10 = results_migrations();
    v10.resize(10);
    migrate(c, v10);
    c.execute("INSERT INTO sweeps (id, name, spec_json, spec_hash, created_at, updated_at, status, corpus_sha256) "
              "VALUES (1, 'old', '{}', 'h1', 0, 0, 'done', ?)",
              std::string(kCorpus));
    c.execute("INSERT INTO cells (id, sweep_id, position, key, variant, seed, config_json, config_hash, max_steps, "
              "max_attempts, updated_at, status, final_val) VALUES (1, 1, 0, 'base-s0', 'base', 0, '{}', "
              "'hash-base-s0', 10, 1, 0, 'done', 2.0)");
    c.execute("INSERT INTO runs (cell_id, attempt, status, device, world_size, started_at, ended_at) "
              "VALUES (1, 1, 'done', 'cpu', 1, 0, 10)");
  }
  ResultsDb db(path, OpenMode::read_write);
  ASSERT_EQ(db.schema_version(), results_schema_version());
  const int64_t b = add_sweep(db, "b");
  EXPECT_TRUE(link_reusable_cells(db, b, cpu_launch()).empty());
  // Recorded with a numerics version (as egm does now), the same run would match.
  db.connection().execute("UPDATE runs SET numerics_version = 1 WHERE cell_id = 1");
  EXPECT_EQ(link_reusable_cells(db, b, cpu_launch()).size(), 1u);
}

}  // namespace
}  // namespace egm::db
