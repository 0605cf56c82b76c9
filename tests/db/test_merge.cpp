// egm merge's work (src/db/merge.h) on databases written through ResultsDb:
// the choice of each cell across three inputs (done wins over pending, a
// running cell arrives interrupted), superseded sweeps left out, the union of
// the seeds in the merged spec and the cells' order, learned parameters and
// metrics copied, --prefer, a conflict refused with nothing written, one run
// identity trained in two inputs kept once (or refused with different results
// unless preferred), and the inputs left byte for byte (and mtime) as they were. The real binaries on
// real sweeps: tests/sweep/sweep_merge.sh.
#include "db/merge.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "db/reuse.h"
#include "db/sqlite.h"
#include "test_helpers.h"
#include "util/error.h"

namespace egm::db {
namespace {

using egm::testing::FileSnapshot;
using egm::testing::make_cell;
using egm::testing::ScratchDir;

std::string spec_of(const std::vector<int64_t>& seeds) {
  return nlohmann::json{{"name", "demo"}, {"preset", "tiny"}, {"variants", {"base"}}, {"seeds", seeds}}.dump(2);
}

// A database with sweep "demo" listing `seeds`, one cell base-sN per seed.
struct Db {
  ResultsDb db;
  int64_t sweep = 0;
  std::vector<int64_t> cells;
  Db(const std::string& path, const std::vector<int64_t>& seeds)
      : db(path, OpenMode::read_write_create) {
    const std::string spec = spec_of(seeds);
    sweep = db.create_or_load_sweep("demo", spec, "hash-" + spec, ChangedSpec::refuse).sweep.id;
    std::vector<CellInput> in;
    for (int64_t s : seeds) in.push_back(make_cell("base", s));
    cells = db.ensure_cells(sweep, in);
  }
  int64_t done(size_t cell, double final_val, const std::string& host) {
    RunInfo info;
    info.host = host;
    info.git_commit = "0123456789ab";
    const int64_t run = db.start_attempt(cells[cell], info);
    db.record_metrics({{cells[cell], run, 10, MetricSplit::train, 2.5, 1e-3, 100.0, 1.0}});
    db.record_params({{cells[cell], run, 10, "mope", -1, 0, "sigma", final_val / 2}});
    Measurements m;
    m.final_val = final_val;
    db.finish_attempt(run, RunStatus::done, "", m, {}, /*step=*/10);
    return run;
  }
};

std::string text(const std::string& path, const std::string& sql) {
  Connection c(path, OpenMode::read_only);
  Statement s = c.prepare(sql);
  std::string out;
  while (s.step()) {
    for (int i = 0; i < s.column_count(); ++i) out += (i ? "|" : "") + (s.is_null(i) ? "NULL" : s.text(i));
    out += ";";
  }
  return out;
}

TEST(Merge, ChoosesEachCellAndKeepsWhereItCameFrom) {
  ScratchDir dir;
  const std::string a = dir.file("a.sqlite"), b = dir.file("b.sqlite"), c = dir.file("c.sqlite");
  {
    // a: base-s0 done, and an older spec of the sweep kept aside (superseded).
    Db old(a, {5});
    old.done(0, 9.0, "old");
    ResultsDb& r = old.db;
    const std::string spec = spec_of({0});
    const int64_t id = r.create_or_load_sweep("demo", spec, "hash-" + spec, ChangedSpec::new_sweep).sweep.id;
    const auto ids = r.ensure_cells(id, {make_cell("base", 0)});
    RunInfo info;
    info.host = "node-a";
    const int64_t run = r.start_attempt(ids[0], info);
    r.record_params({{ids[0], run, 10, "mope", -1, 0, "sigma", 0.5}});
    Measurements m;
    m.final_val = 1.0;
    r.finish_attempt(run, RunStatus::done, "", m, {}, 10);
  }
  {
    Db d(b, {1});  // b: base-s1 still running when it is merged
    RunInfo info;
    info.host = "node-b";
    d.db.start_attempt(d.cells[0], info);
  }
  { Db d(c, {0}); }  // c: base-s0 pending
  const FileSnapshot before_a = FileSnapshot::of(a), before_b = FileSnapshot::of(b), before_c = FileSnapshot::of(c);
  const std::string out = dir.file("out.sqlite");
  MergeSummary s = merge_databases({out, {c, a, b}, "", false});
  EXPECT_TRUE(FileSnapshot::of(a).same_as(before_a));
  EXPECT_TRUE(FileSnapshot::of(b).same_as(before_b));
  EXPECT_TRUE(FileSnapshot::of(c).same_as(before_c));
  ASSERT_EQ(s.sweeps.size(), 1u);
  EXPECT_EQ(s.sweeps[0].cells, 2);
  EXPECT_EQ(s.sweeps[0].done, 1);
  EXPECT_EQ(s.sweeps[0].cells_from, (std::vector<int64_t>{0, 1, 1}));  // done in a beats pending in c
  EXPECT_TRUE(s.sweeps[0].spec_widened);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("left out superseded sweep demo@1"), std::string::npos) << s.notes[0];

  // An ordinary database at the current version, readable by ResultsDb.
  ResultsDb r = open_for_reading(out);
  EXPECT_EQ(r.schema_version(), results_schema_version());
  EXPECT_EQ(text(out, "SELECT name, status FROM sweeps"), "demo|interrupted;");
  const std::string spec = text(out, "SELECT spec_json FROM sweeps");
  EXPECT_EQ(nlohmann::json::parse(spec.substr(0, spec.size() - 1)).at("seeds"), nlohmann::json({0, 1}));
  EXPECT_EQ(text(out, "SELECT key, position, status, final_val FROM cells ORDER BY key"),
            "base-s0|0|done|1.0;base-s1|1|interrupted|NULL;");
  EXPECT_EQ(text(out, "SELECT c.key, r.status, r.host, s.path FROM runs r JOIN cells c ON c.id = r.cell_id "
                      "JOIN merge_sources s ON s.id = r.merge_source ORDER BY c.key"),
            "base-s0|done|node-a|" + a + ";base-s1|interrupted|node-b|" + b + ";");
  EXPECT_EQ(text(out, "SELECT c.key, p.value FROM params p JOIN cells c ON c.id = p.cell_id"), "base-s0|0.5;");
  EXPECT_EQ(text(out, "SELECT count(*) FROM merge_sources"), "3;");
  EXPECT_EQ(text(out, "PRAGMA journal_mode"), "wal;");
  EXPECT_EQ(text(out, "PRAGMA foreign_key_check"), "");
}

// A sequential sweep's looks travel with it, under the merged sweep's id;
// a superseded sweep's stay behind.
TEST(Merge, CopiesTheLooksOfEachMergedSweep) {
  ScratchDir dir;
  const std::string a = dir.file("a.sqlite"), b = dir.file("b.sqlite");
  auto look = [](ResultsDb& r, int64_t sweep, int64_t n, const std::string& next) {
    r.connection().execute(
        "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
        "next, method, params) VALUES (?, ?, ?, 'delta(ega)', ?, 0.1, NULL, NULL, 0.5, 'undecided', 0, ?, 't-mixture', "
        "'alpha=0.05')",
        sweep, n, 100.0 + static_cast<double>(n), n + 1, next);
  };
  {
    Db old(a, {7});
    look(old.db, old.sweep, 1, "superseded");
    const std::string spec = spec_of({0});
    const int64_t id = old.db.create_or_load_sweep("demo", spec, "hash-" + spec, ChangedSpec::new_sweep).sweep.id;
    old.db.ensure_cells(id, {make_cell("base", 0)});
    look(old.db, id, 1, "seed 1 added");
    look(old.db, id, 2, "stopped");
  }
  { Db d(b, {1}); }
  const std::string out = dir.file("out.sqlite");
  merge_databases({out, {b, a}, "", false});
  EXPECT_EQ(text(out, "SELECT s.name, l.look, l.seeds, l.next, l.method FROM looks l JOIN sweeps s ON s.id = l.sweep_id "
                      "ORDER BY l.id"),
            "demo|1|2|seed 1 added|t-mixture;demo|2|3|stopped|t-mixture;");
}

TEST(Merge, AConflictIsRefusedWithNothingWrittenUnlessPreferred) {
  ScratchDir dir;
  const std::string a = dir.file("a.sqlite"), b = dir.file("b.sqlite");
  { Db(a, {0, 1}).done(0, 1.0, "node-a"); }
  {
    Db d(b, {0, 1});
    d.done(0, 2.0, "node-b");
    d.done(1, 3.0, "node-b");
  }
  const std::string out = dir.file("out.sqlite");
  try {
    merge_databases({out, {a, b}, "", false});
    FAIL() << "a conflict was merged";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("conflict: 1 cell(s) done in two inputs with different results (demo base-s0: 1 in " + a +
                        ", 2 in " + b),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("")))  // no temporary file left
    EXPECT_EQ(entry.path().string().find(".merging-"), std::string::npos) << entry.path();

  MergeSummary s = merge_databases({out, {a, b}, b, false});
  EXPECT_EQ(s.sweeps.at(0).preferred, 1);
  EXPECT_FALSE(s.sweeps.at(0).spec_widened);
  EXPECT_EQ(text(out, "SELECT c.key, c.final_val, r.host FROM cells c JOIN runs r ON r.cell_id = c.id ORDER BY c.key"),
            "base-s0|2.0|node-b;base-s1|3.0|node-b;");
  EXPECT_THROW(merge_databases({out, {a, b}, b, false}), ConfigError);  // out exists
  EXPECT_NO_THROW(merge_databases({out, {a, b}, a, /*force=*/true}));
  EXPECT_EQ(text(out, "SELECT final_val FROM cells ORDER BY key"), "1.0;3.0;");
}

// One cell base-s0 of sweep `sweep`, trained with a known identity (corpus
// c0ffee, cpu, world size 1, numerics version `numerics`) to `final_val`, in
// its own database at `path`.
void train_one(const std::string& path, const std::string& sweep, double final_val, const std::string& host,
               std::optional<int64_t> numerics = 1) {
  ResultsDb db(path, OpenMode::read_write_create);
  const std::string spec =
      nlohmann::json{{"name", sweep}, {"preset", "tiny"}, {"variants", {"base"}}, {"seeds", {0}}}.dump(2);
  const int64_t id = db.create_or_load_sweep(sweep, spec, "hash-" + spec, ChangedSpec::refuse).sweep.id;
  const int64_t cell = db.ensure_cells(id, {make_cell("base", 0)}).at(0);
  db.set_sweep_corpus(id, SweepCorpus{"c0ffee", 10, "/data/input.txt"});
  RunInfo info;
  info.host = host;
  info.device = parse_device_name("cpu", "");
  info.world_size = 1;
  info.threads = 2;
  info.numerics_version = numerics;
  const int64_t run = db.start_attempt(cell, info);
  db.record_metrics({{cell, run, 10, MetricSplit::eval_val, final_val, 1e-3, 100.0, 1.0}});
  db.record_params({{cell, run, 10, "mope", -1, 0, "sigma", final_val / 2}});
  Measurements m;
  m.final_val = final_val;
  db.finish_attempt(run, RunStatus::done, "", m, {}, /*step=*/10);
  db.connection().execute("UPDATE runs SET started_at = 1000, ended_at = 1100 WHERE id = ?", run);
}

// Sweep, host, whether a link, wall seconds and reused_from of every run of the merge.
std::string runs_of(const std::string& out) {
  return text(out, "SELECT s.name, r.host, r.reused_run, r.ended_at - r.started_at, r.reused_from FROM runs r "
                   "JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON s.id = c.sweep_id ORDER BY s.name");
}

// A link reads its original's rows (row_sources, schema v12). When merge keeps
// the link but not its original (another input's cell wins it under --prefer),
// the link arrives holding a copy of the original's rows, naming no run here.
TEST(Merge, ALinkWhoseOriginalStaysBehindArrivesWithACopyOfItsRows) {
  ScratchDir dir;
  const std::string a = dir.file("a.sqlite"), b = dir.file("b.sqlite"), out = dir.file("out.sqlite");
  train_one(a, "x", 2.25, "node-a");
  train_one(b, "x", 2.75, "node-b");  // x's one cell again, other results: --prefer b keeps b's
  {
    // a's sweep y takes x's run: a link, with no rows of its own.
    ResultsDb db(a, OpenMode::read_write);
    const std::string spec =
        nlohmann::json{{"name", "y"}, {"preset", "tiny"}, {"variants", {"base"}}, {"seeds", {0}}}.dump(2);
    const int64_t y = db.create_or_load_sweep("y", spec, "hash-" + spec, ChangedSpec::refuse).sweep.id;
    db.ensure_cells(y, {make_cell("base", 0)});
    db.set_sweep_corpus(y, SweepCorpus{"c0ffee", 10, "/data/input.txt"});
    const ReuseLaunch launch{"c0ffee", "cpu", 1, [](const std::string&) { return 1; }};
    ASSERT_EQ(link_reusable_cells(db, y, launch).size(), 1u);
  }
  EXPECT_EQ(text(a, "SELECT count(DISTINCT cell_id) FROM metrics"), "1;");
  merge_databases({out, {a, b}, b, false});
  EXPECT_EQ(text(out, "SELECT s.name, r.host, r.reused_run FROM runs r JOIN cells c ON c.id = r.cell_id "
                      "JOIN sweeps s ON s.id = c.sweep_id ORDER BY s.name"),
            "x|node-b|NULL;y|node-a|NULL;");
  // y reads a's x run (2.25), stored under its own cell and run now; x is b's (2.75).
  EXPECT_EQ(text(out, "SELECT p.sweep, p.loss, p.run_id = r.id FROM metric_points p JOIN runs r ON r.cell_id = "
                      "p.cell_id ORDER BY p.sweep"),
            "x|2.75|1;y|2.25|1;");
  EXPECT_EQ(text(out, "SELECT p.value FROM params p JOIN cells c ON c.id = p.cell_id ORDER BY c.sweep_id"),
            "1.375;1.125;");
  EXPECT_EQ(text(out, "SELECT count(*) FROM metrics m JOIN row_sources x ON x.rows_cell_id = m.cell_id "
                      "WHERE x.cell_id = m.cell_id"),
            "2;");
  EXPECT_EQ(text(out, "PRAGMA foreign_key_check"), "");
}

// Two inputs that trained one run identity in sweeps of other names (issue 38):
// with the same results the first input's run is kept and the other cell is
// linked to it as a reused run is, without a flag.
TEST(Merge, OneIdentityTrainedInTwoInputsIsKeptOnce) {
  ScratchDir dir;
  const std::string a = dir.file("a.sqlite"), b = dir.file("b.sqlite"), out = dir.file("out.sqlite");
  train_one(a, "x", 2.25, "node-a");
  train_one(b, "y", 2.25, "node-b");
  const FileSnapshot before_a = FileSnapshot::of(a), before_b = FileSnapshot::of(b);
  const MergeSummary s = merge_databases({out, {a, b}, "", false});
  EXPECT_TRUE(FileSnapshot::of(a).same_as(before_a));
  EXPECT_TRUE(FileSnapshot::of(b).same_as(before_b));
  ASSERT_EQ(s.sweeps.size(), 2u);
  EXPECT_EQ(s.sweeps[0].linked + s.sweeps[0].linked_preferred, 0);
  EXPECT_EQ(s.sweeps[1].linked, 1);
  EXPECT_EQ(twins_text(s.sweeps[1]),
            "1 cell trained in another input too, with one identity and the same results: linked to that run, "
            "counted once");
  EXPECT_EQ(runs_of(out), "x|node-a|NULL|100.0|NULL;y|node-a|1|0.0|run 1 of sweep 'x', cell base-s0, trained on node-a;");
  // y's cell reads as x's: its results, curve and parameters, under its own run,
  // read through (row_sources); the rows are stored once, under x's cell.
  EXPECT_EQ(text(out, "SELECT p.sweep, c.final_val, p.run_id, p.loss FROM metric_points p JOIN cells c "
                      "ON c.id = p.cell_id ORDER BY p.sweep"),
            "x|2.25|1|2.25;y|2.25|2|2.25;");
  EXPECT_EQ(text(out, "SELECT run_id, count(*) FROM params GROUP BY cell_id ORDER BY cell_id"), "1|1;2|1;");
  EXPECT_EQ(text(out, "SELECT count(*) FROM param_snapshots GROUP BY cell_id"), "1;");
  EXPECT_EQ(text(out, "SELECT count(DISTINCT cell_id) FROM metrics"), "1;");
  EXPECT_EQ(text(out, "SELECT count(*) FROM events WHERE kind = 'run_reused' AND message LIKE "
                      "'base-s0 reused run 1 of sweep ''x''%egm merge: % both trained it with one identity; kept once)'"),
            "1;");
  EXPECT_EQ(text(out, "PRAGMA foreign_key_check"), "");
  ResultsDb r = open_for_reading(out);
  const std::vector<ReusedCell> reused = reused_cells(r, r.find_sweep("y")->id);
  ASSERT_EQ(reused.size(), 1u);
  EXPECT_EQ(reused[0].original_sweep, std::optional<std::string>("x"));
  EXPECT_EQ(reused[0].original_seconds, std::optional<double>(100));  // what the compute statement says reuse saved

  // An unknown identity (no numerics version recorded) is the same as no other run: both kept.
  train_one(dir.file("old.sqlite"), "y", 2.25, "node-b", std::nullopt);
  merge_databases({dir.file("out2.sqlite"), {a, dir.file("old.sqlite")}, "", false});
  EXPECT_EQ(runs_of(dir.file("out2.sqlite")), "x|node-a|NULL|100.0|NULL;y|node-b|NULL|100.0|NULL;");
}

// With different results, one identity trained in two inputs is a conflict:
// refused in one line naming the cells and --prefer, nothing written; with
// --prefer that input's run is kept and the other cell linked to it.
TEST(Merge, OneIdentityWithDifferentResultsIsRefusedUnlessPreferred) {
  ScratchDir dir;
  const std::string a = dir.file("a.sqlite"), b = dir.file("b.sqlite"), out = dir.file("out.sqlite");
  train_one(a, "x", 2.25, "node-a");
  train_one(b, "y", 2.5, "node-b");
  try {
    merge_databases({out, {a, b}, "", false});
    FAIL() << "two runs of one identity with different results were merged";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("conflict: 1 run(s) of one identity trained in two inputs with different results (x base-s0 "
                        "in " + a + ", y base-s0 in " + b + ": config hash-base-s0, corpus c0ffee, cpu x1, numerics 1)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("pass --prefer INPUT to keep that input's run"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("")))  // no temporary file left
    EXPECT_EQ(entry.path().string().find(".merging-"), std::string::npos) << entry.path();

  const MergeSummary s = merge_databases({out, {a, b}, b, false});
  EXPECT_EQ(s.sweeps.at(0).linked_preferred, 1);
  EXPECT_EQ(runs_of(out), "x|node-b|2|0.0|run 2 of sweep 'y', cell base-s0, trained on node-b;y|node-b|NULL|100.0|NULL;");
  EXPECT_EQ(text(out, "SELECT final_val FROM cells ORDER BY id"), "2.5;2.5;");
  EXPECT_EQ(text(out, "PRAGMA foreign_key_check"), "");
}

}  // namespace
}  // namespace egm::db
