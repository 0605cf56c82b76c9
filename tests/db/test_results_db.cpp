// ResultsDb: what the coordinator calls, and what readers see meanwhile.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "db/results_db.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm::db;
using egm::MetricSplit;
using egm::testing::FileSnapshot;
using egm::testing::make_cell;
using egm::testing::ScratchDir;

RunInfo info(const std::string& host = "node1", std::optional<int64_t> resumed = std::nullopt) {
  RunInfo i;
  i.host = host;
  i.device = egm::parse_device_name("cuda:0");
  i.world_size = 1;
  i.backend = egm::Backend::none;
  i.torch_version = "1.13.0";
  i.git_commit = "abc123";
  i.resumed_from_step = resumed;
  return i;
}

// A fresh database with sweep "s" and one cell, base-s0 (at most `max_attempts` attempts).
struct OneCell {
  ScratchDir dir;
  ResultsDb db{dir.file("r.sqlite"), OpenMode::read_write_create};
  int64_t sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  int64_t cell;
  explicit OneCell(int max_attempts = 2) : cell(db.ensure_cells(sweep, {make_cell("base", 0, 100, max_attempts)})[0]) {}
};

TEST(Sweeps, CreateLoadAndRefuseChangedSpec) {
  ScratchDir dir;
  const std::string path = dir.file("r.sqlite");
  int64_t id = 0;
  {
    ResultsDb db(path, OpenMode::read_write_create);
    auto first = db.create_or_load_sweep("paper_2x2", "{\"seeds\":[0]}", "hash-A", false);
    EXPECT_TRUE(first.created);
    EXPECT_EQ(first.sweep.status, SweepStatus::pending);
    id = first.sweep.id;
    auto again = db.create_or_load_sweep("paper_2x2", "{\"seeds\":[0]}", "hash-A", false);
    EXPECT_FALSE(again.created);
    EXPECT_EQ(again.sweep.id, id);
    EXPECT_EQ(db.list_sweeps().size(), 1u);
  }
  const FileSnapshot before = FileSnapshot::of(path);
  {
    ResultsDb db(path, OpenMode::read_write);
    try {
      db.create_or_load_sweep("paper_2x2", "{\"seeds\":[0,1]}", "hash-B", false);
      FAIL() << "a changed spec was accepted";
    } catch (const egm::ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--new-sweep"), std::string::npos) << what;
      EXPECT_NE(what.find("different spec"), std::string::npos) << what;
    }
    EXPECT_EQ(db.sweep(id).spec_hash, "hash-A");
  }
  // The refusal wrote nothing.
  EXPECT_TRUE(FileSnapshot::of(path).same_as(before));
}

TEST(Sweeps, NewSweepKeepsTheOldOneAside) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  auto old = db.create_or_load_sweep("s", "{}", "hash-A", false);
  db.ensure_cells(old.sweep.id, {make_cell("base", 0)});
  auto fresh = db.create_or_load_sweep("s", "{}", "hash-B", /*new_sweep=*/true);
  EXPECT_TRUE(fresh.created);
  EXPECT_NE(fresh.sweep.id, old.sweep.id);
  ASSERT_TRUE(fresh.superseded_as);
  EXPECT_EQ(*fresh.superseded_as, "s@" + std::to_string(old.sweep.id));
  EXPECT_EQ(db.sweep(old.sweep.id).status, SweepStatus::superseded);
  EXPECT_EQ(db.sweep(old.sweep.id).name, *fresh.superseded_as);
  EXPECT_EQ(db.list_sweeps().size(), 1u);
  EXPECT_EQ(db.list_sweeps(/*include_superseded=*/true).size(), 2u);
  // The old results stay queryable under the new name.
  CellFilter f;
  f.sweeps = {*fresh.superseded_as};
  EXPECT_EQ(db.list_cells(f).size(), 1u);
  EXPECT_EQ(db.find_sweep("s")->id, fresh.sweep.id);
}

TEST(Cells, EnsureCellsIsIdempotentAndRefusesChangedExpansion) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  const std::vector<CellInput> cells = {make_cell("base", 0), make_cell("base", 1), make_cell("ega", 0),
                                        make_cell("ega", 1)};
  const auto ids = db.ensure_cells(sweep, cells);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(db.ensure_cells(sweep, cells), ids);
  EXPECT_EQ(db.list_cells().size(), 4u);
  // Stored in spec order with the given fields.
  const auto rows = db.list_cells();
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, ids[i]);
    EXPECT_EQ(rows[i].position, static_cast<int64_t>(i));
    EXPECT_EQ(rows[i].key, cells[i].key);
    EXPECT_EQ(rows[i].status, CellStatus::pending);
    EXPECT_EQ(rows[i].max_attempts, 2);
  }
  // Same variant and seed, another config: refused, nothing written.
  auto changed = cells;
  changed[2] = make_cell("ega", 0, 100, 2, "-changed");
  EXPECT_THROW(db.ensure_cells(sweep, changed), egm::ConfigError);
  // Cells the input no longer has: refused too.
  EXPECT_THROW(db.ensure_cells(sweep, {cells[0], cells[1]}), egm::ConfigError);
  EXPECT_EQ(db.list_cells().size(), 4u);
  EXPECT_EQ(db.cell(ids[2]).config_hash, cells[2].config_hash);
}

TEST(Attempts, LifecycleRetriesAndResults) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  const auto ids = db.ensure_cells(sweep, {make_cell("base", 0, 100, /*max_attempts=*/2), make_cell("ega", 0)});
  const int64_t cell = ids[0];
  EXPECT_EQ(db.cells_to_run(sweep).size(), 2u);

  const int64_t run1 = db.start_attempt(cell, info());
  CellRow c = db.cell(cell);
  EXPECT_EQ(c.status, CellStatus::running);
  EXPECT_EQ(c.attempts, 1);
  db.finish_attempt(run1, RunStatus::failed, "loss became NaN at step 40");
  c = db.cell(cell);
  EXPECT_EQ(c.status, CellStatus::failed);
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(*c.last_error, "loss became NaN at step 40");
  EXPECT_EQ(db.cells_to_run(sweep).size(), 2u);  // 1 failure of 2 allowed: retried

  // An interruption (preemption) does not count against the failure budget.
  const int64_t run2 = db.start_attempt(cell, info("node2"));
  db.finish_attempt(run2, RunStatus::interrupted, "preempted");
  EXPECT_EQ(db.cell(cell).failures, 1);
  EXPECT_EQ(db.cell(cell).status, CellStatus::interrupted);

  const int64_t run3 = db.start_attempt(cell, info("node3", 60));
  egm::Measurements r;
  r.final_val = 1.4742;
  r.best_val = 1.47;
  r.full_val = 1.48;
  db.finish_attempt(run3, RunStatus::done, "", r, {}, /*step=*/100);
  c = db.cell(cell);
  EXPECT_EQ(c.status, CellStatus::done);
  EXPECT_EQ(c.attempts, 3);
  EXPECT_EQ(*c.results.final_val, 1.4742);
  EXPECT_EQ(*c.final_step, 100);
  EXPECT_FALSE(c.results.ar_val);
  EXPECT_EQ(db.cells_to_run(sweep).size(), 1u);

  CellFilter f;
  f.variants = {"base"};
  const auto runs = db.list_runs(f);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].status, RunStatus::failed);
  EXPECT_EQ(runs[1].status, RunStatus::interrupted);
  EXPECT_EQ(runs[2].status, RunStatus::done);
  EXPECT_EQ(runs[2].attempt, 3);
  EXPECT_EQ(runs[2].info.host, "node3");
  EXPECT_EQ(*runs[2].info.resumed_from_step, 60);
  EXPECT_TRUE(runs[2].ended_at);
  // A done cell is not started again, and an attempt ends once.
  EXPECT_THROW(db.start_attempt(cell, info()), egm::Error);
  EXPECT_THROW(db.finish_attempt(run3, RunStatus::failed, "again"), egm::Error);
}

TEST(Attempts, ExhaustedFailuresAreNotRetried) {
  OneCell one(/*max_attempts=*/2);
  ResultsDb& db = one.db;
  const int64_t sweep = one.sweep, cell = one.cell;
  db.finish_attempt(db.start_attempt(cell, info()), RunStatus::failed, "boom 1");
  EXPECT_EQ(db.cells_to_run(sweep).size(), 1u);
  db.finish_attempt(db.start_attempt(cell, info()), RunStatus::failed, "boom 2");
  EXPECT_TRUE(db.cells_to_run(sweep).empty());
  auto p = db.sweep_progress(sweep);
  EXPECT_EQ(p.failed, 1);
  EXPECT_EQ(p.exhausted, 1);
  EXPECT_EQ(p.steps_given_up, 100);
  ASSERT_TRUE(p.eta_s);
  EXPECT_EQ(*p.eta_s, 0.0);  // nothing left that will run
}

// A failure that would recur identically (not retriable) fails the cell for
// good at once, also for a later run of the same spec; its full text goes to the
// attempt_failed event while the cell and the run keep the one line.
TEST(Attempts, NotRetriableFailureGivesTheCellUpAtOnce) {
  OneCell one(/*max_attempts=*/3);
  ResultsDb& db = one.db;
  const int64_t sweep = one.sweep, cell = one.cell;
  const int64_t run = db.start_attempt(cell, info());
  const std::string trace = "out of memory\nException raised from alloc at a.cpp:1 (most recent call first):\nframe #0";
  db.finish_attempt(run, RunStatus::failed, "out of memory", {}, FailureInfo{trace, /*retriable=*/false});
  const CellRow c = db.cell(cell);
  EXPECT_EQ(c.status, CellStatus::failed);
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(c.max_attempts, 1);
  EXPECT_EQ(*c.last_error, "out of memory");
  EXPECT_EQ(*db.run(run).error, "out of memory");
  EXPECT_TRUE(db.cells_to_run(sweep).empty());
  EXPECT_EQ(db.sweep_progress(sweep).exhausted, 1);
  std::string failed_event;
  for (const auto& e : db.list_events(sweep, 100))
    if (e.kind == egm::db::EventKind::attempt_failed) failed_event = e.message;
  EXPECT_EQ(failed_event, "base-s0 attempt 1 failed (not retriable): out of memory\n" + trace);
}

TEST(Liveness, HeartbeatAndStaleness) {
  ScratchDir dir;
  double clock = 1000;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  db.set_clock([&clock] { return clock; });
  const int64_t sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  EXPECT_FALSE(db.sweep(sweep).heartbeat_at);  // never run
  db.set_sweep_status(sweep, SweepStatus::running);
  EXPECT_EQ(*db.sweep(sweep).heartbeat_at, 1000);  // 'running' comes with a first heartbeat
  clock = 1000 + kHeartbeatIntervalS;
  db.heartbeat(sweep);
  const SweepRow alive = db.sweep(sweep);
  EXPECT_EQ(*alive.heartbeat_at, clock);
  EXPECT_FALSE(stale_since(alive, clock + kStaleAfterS));
  ASSERT_TRUE(stale_since(alive, clock + kStaleAfterS + 1));
  EXPECT_EQ(*stale_since(alive, clock + kStaleAfterS + 1), clock);
  // Only a running sweep can be stale: one that ended is simply over.
  db.set_sweep_status(sweep, SweepStatus::interrupted);
  EXPECT_FALSE(stale_since(db.sweep(sweep), clock + 3600));
  // The heartbeat composes with an outer transaction (the coordinator batches it with its writes).
  {
    Transaction tx(db.connection());
    clock += 1;
    db.heartbeat(sweep);
    tx.commit();
  }
  EXPECT_EQ(*db.sweep(sweep).heartbeat_at, clock);
  EXPECT_THROW(db.heartbeat(sweep + 1), egm::DbError);
}

TEST(Attempts, RunningCellFromAPreviousCoordinatorIsRecovered) {
  ScratchDir dir;
  const std::string path = dir.file("r.sqlite");
  int64_t sweep = 0, cell = 0, run = 0;
  {
    ResultsDb db(path, OpenMode::read_write_create);
    sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
    cell = db.ensure_cells(sweep, {make_cell("base", 0), make_cell("ega", 0)})[0];
    run = db.start_attempt(cell, info());
    db.finish_attempt(db.start_attempt(db.cells_to_run(sweep)[1].id, info()), RunStatus::done, "", {});
  }  // the coordinator dies with `cell` running
  ResultsDb db(path, OpenMode::read_write);
  auto todo = db.cells_to_run(sweep);
  ASSERT_EQ(todo.size(), 1u);
  EXPECT_EQ(todo[0].id, cell);
  EXPECT_EQ(todo[0].status, CellStatus::running);
  EXPECT_EQ(db.recover_interrupted(sweep), 1);
  EXPECT_EQ(db.cell(cell).status, CellStatus::interrupted);
  EXPECT_EQ(db.run(run).status, RunStatus::interrupted);
  EXPECT_TRUE(db.run(run).ended_at);
  EXPECT_EQ(db.cell(cell).failures, 0);
  EXPECT_EQ(db.cells_to_run(sweep).size(), 1u);
  EXPECT_EQ(db.recover_interrupted(sweep), 0);
  const int64_t run2 = db.start_attempt(cell, info());
  EXPECT_EQ(db.run(run2).attempt, 2);
}

TEST(Attempts, StartingAgainClosesALeftoverRunningAttempt) {
  OneCell one;
  ResultsDb& db = one.db;
  const int64_t cell = one.cell;
  const int64_t run1 = db.start_attempt(cell, info());
  const int64_t run2 = db.start_attempt(cell, info());  // no recover_interrupted in between
  EXPECT_EQ(db.run(run1).status, RunStatus::interrupted);
  EXPECT_EQ(db.run(run2).status, RunStatus::running);
  CellFilter f;
  f.statuses = {"running"};
  EXPECT_EQ(db.list_runs(f).size(), 1u);
}

TEST(Metrics, ResumedAttemptOverwritesRedoneSteps) {
  OneCell one;
  ResultsDb& db = one.db;
  const int64_t cell = one.cell;
  const int64_t run1 = db.start_attempt(cell, info());
  std::vector<MetricPoint> first;
  for (int64_t step = 0; step <= 10; ++step)
    first.push_back({cell, run1, step, MetricSplit::train, 4.0 - 0.1 * static_cast<double>(step), 3e-4, 1000.0, 0});
  first.push_back({cell, run1, 10, MetricSplit::eval_val, 3.5, std::nullopt, std::nullopt, 0});
  db.record_metrics(first);
  db.record_params({{cell, run1, 10, "mope", -1, 0, "sigma", 5.0}, {cell, run1, 10, "ega", 2, 3, "tau", 0.1}});
  db.finish_attempt(run1, RunStatus::interrupted, "preempted");

  // Resumed from the checkpoint at step 5: steps 5..10 are trained again.
  const int64_t run2 = db.start_attempt(cell, info("node2", 5));
  std::vector<MetricPoint> again;
  for (int64_t step = 5; step <= 10; ++step) again.push_back({cell, run2, step, MetricSplit::train, 9.0, 3e-4, 2000.0, 0});
  db.record_metrics(again);
  db.record_params({{cell, run2, 10, "mope", -1, 0, "sigma", 6.0}});

  Connection& c = db.connection();
  Table t = query_table(c, "SELECT count(*), sum(run_id = " + std::to_string(run2) +
                               ") FROM metrics WHERE cell_id = " + std::to_string(cell) + " AND split = 'train'");
  EXPECT_EQ(std::get<int64_t>(t.rows[0][0]), 11);  // steps 0..10 once each
  EXPECT_EQ(std::get<int64_t>(t.rows[0][1]), 6);   // steps 5..10 now belong to run 2
  Statement s = c.prepare("SELECT loss, tokens_per_s FROM metrics WHERE cell_id = ? AND split = 'train' AND step = ?");
  s.bind_all(cell, int64_t{7});
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.real(0), 9.0);
  EXPECT_EQ(s.real(1), 2000.0);
  s.reset();
  s.bind_all(cell, int64_t{4});
  ASSERT_TRUE(s.step());
  EXPECT_DOUBLE_EQ(s.real(0), 3.6);
  Table p = query_table(c, "SELECT count(*), max(value) FROM params WHERE module = 'mope'");
  EXPECT_EQ(std::get<int64_t>(p.rows[0][0]), 1);
  EXPECT_EQ(std::get<double>(p.rows[0][1]), 6.0);
  EXPECT_EQ(*db.cell(cell).latest_step, 10);
  // A listing that leaves the step out (the coordinator's) has the same row otherwise.
  CellFilter with, without;
  without.latest_step = false;
  const std::vector<CellRow> full = db.list_cells(with), bare = db.list_cells(without);
  ASSERT_EQ(full.size(), 1u);
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(full[0].latest_step, std::optional<int64_t>(10));
  EXPECT_FALSE(bare[0].latest_step.has_value());
  EXPECT_EQ(bare[0].key, full[0].key);
  EXPECT_EQ(bare[0].config_json, full[0].config_json);
  EXPECT_EQ(bare[0].attempts, full[0].attempts);
}

TEST(Metrics, BatchIsOneTransaction) {
  OneCell one;
  ResultsDb& db = one.db;
  const int64_t sweep = one.sweep, cell = one.cell;
  const int64_t run = db.start_attempt(cell, info());
  RecordBatch batch;
  batch.metrics.push_back({cell, run, 1, MetricSplit::train, 3.0, std::nullopt, std::nullopt, 0});
  batch.events.push_back({sweep, cell, run, egm::db::EventKind::checkpoint, "hello", 0, 1});
  batch.params.push_back({cell, /*run_id=*/9999, 1, "ega", 0, 0, "tau", 0.0});  // no such run: FK fails
  EXPECT_THROW(db.record_batch(batch), egm::DbError);
  Table t = query_table(db.connection(), "SELECT (SELECT count(*) FROM metrics), "
                                         "(SELECT count(*) FROM events WHERE kind = 'checkpoint')");
  EXPECT_EQ(std::get<int64_t>(t.rows[0][0]), 0);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][1]), 0);
  batch.params[0].run_id = run;
  db.record_batch(batch);
  auto events = db.list_events(sweep);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, egm::db::EventKind::checkpoint);
  EXPECT_EQ(events.back().step, 1);
  EXPECT_EQ(events.front().kind, egm::db::EventKind::sweep_created);
  EXPECT_FALSE(events.front().step);
}

// A sequential sweep's looks, typed (egm paper reads them): in look order, NULL bounds as none,
// and only the sweep's own; another sweep has none.
TEST(Readers, LooksInLookOrderWithUnboundedAsNone) {
  ScratchDir dir;
  ResultsDb db(dir.file("l.sqlite"), OpenMode::read_write_create);
  const int64_t a = db.create_or_load_sweep("a", "{}", "h", false).sweep.id;
  const int64_t b = db.create_or_load_sweep("b", "{}", "h2", false).sweep.id;
  const char* insert =
      "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
      "next, method, params) VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, 't-mixture', '')";
  db.connection().execute(insert, a, 2, "delta(ega)", 4, 0.05, 0.01, 0.09, 0.01, "positive", 1, "stopped");
  db.connection().execute(insert, a, 1, "delta(ega)", 2, 0.04, nullptr, nullptr, 1.0, "undecided", 0,
                          "seeds 2-3 added");
  EXPECT_TRUE(db.list_looks(b).empty());
  const std::vector<egm::db::LookRow> looks = db.list_looks(a);
  ASSERT_EQ(looks.size(), 2u);
  EXPECT_EQ(looks[0].look, 1);
  EXPECT_EQ(looks[0].seeds, 2);
  EXPECT_FALSE(looks[0].lower.has_value());
  EXPECT_FALSE(looks[0].settled);
  EXPECT_EQ(looks[0].next, "seeds 2-3 added");
  EXPECT_EQ(looks[1].claim, "delta(ega)");
  EXPECT_EQ(*looks[1].lower, 0.01);
  EXPECT_EQ(looks[1].decision, "positive");
  EXPECT_TRUE(looks[1].settled);
}

TEST(Readers, SeeNoResultOrTheWholeResult) {
  ScratchDir dir;
  const std::string path = dir.file("r.sqlite");
  ResultsDb writer(path, OpenMode::read_write_create);
  const int64_t sweep = writer.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  const int64_t cell = writer.ensure_cells(sweep, {make_cell("base", 0)})[0];
  const int64_t run = writer.start_attempt(cell, info());
  ResultsDb reader(path, OpenMode::read_only);
  {
    Transaction tx(writer.connection());  // hold the finish open mid-way
    egm::Measurements r;
    r.final_val = 1.5;
    writer.finish_attempt(run, RunStatus::done, "", r);
    CellRow seen = reader.cell(cell);
    EXPECT_EQ(seen.status, CellStatus::running);
    EXPECT_FALSE(seen.results.final_val);
    EXPECT_EQ(reader.run(run).status, RunStatus::running);
    tx.commit();
  }
  CellRow seen = reader.cell(cell);
  EXPECT_EQ(seen.status, CellStatus::done);
  EXPECT_EQ(*seen.results.final_val, 1.5);
  EXPECT_EQ(reader.run(run).status, RunStatus::done);
}

TEST(Readers, ConcurrentReaderNeverSeesAHalfFinishedCell) {
  ScratchDir dir;
  const std::string path = dir.file("r.sqlite");
  constexpr int kCells = 150;
  ResultsDb writer(path, OpenMode::read_write_create);
  const int64_t sweep = writer.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  std::vector<CellInput> inputs;
  for (int i = 0; i < kCells; ++i) inputs.push_back(make_cell("v", i));
  const auto ids = writer.ensure_cells(sweep, inputs);

  std::atomic<bool> stop{false};
  std::atomic<int> violations{0}, snapshots{0};
  std::thread reader_thread([&] {
    ResultsDb reader(path, OpenMode::read_only);
    while (!stop.load()) {
      Table t = query_table(reader.connection(),
                            "SELECT c.status, c.final_val, c.final_step, "
                            "(SELECT group_concat(status) FROM runs r WHERE r.cell_id = c.id) FROM cells c");
      for (const auto& row : t.rows) {
        const bool done = std::get<std::string>(row[0]) == "done";
        const bool has_val = !std::holds_alternative<std::monostate>(row[1]);
        const bool has_step = !std::holds_alternative<std::monostate>(row[2]);
        const bool run_done = std::holds_alternative<std::string>(row[3]) && std::get<std::string>(row[3]) == "done";
        if (done != has_val || done != has_step || done != run_done) ++violations;
      }
      ++snapshots;
    }
  });
  for (int i = 0; i < kCells; ++i) {
    const int64_t run = writer.start_attempt(ids[i], info());
    egm::Measurements r;
    r.final_val = 1.0 + i;
    writer.finish_attempt(run, RunStatus::done, "", r, {}, /*step=*/100);
  }
  stop = true;
  reader_thread.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(snapshots.load(), 0);
}

TEST(Progress, CountsStepsRatesAndEta) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  double clock = 1000.0;
  db.set_clock([&] { return clock; });
  const int64_t sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  const auto ids = db.ensure_cells(sweep, {make_cell("base", 0, 100), make_cell("ega", 0, 100), make_cell("mope", 0, 100)});
  db.finish_attempt(db.start_attempt(ids[0], info()), RunStatus::done, "", {});
  const int64_t run = db.start_attempt(ids[1], info("gpu07"));
  // Steps 10 and 30, ten seconds apart: 2 steps/s.
  db.record_metrics({{ids[1], run, 10, MetricSplit::train, 2.5, std::nullopt, std::nullopt, 2000.0},
                     {ids[1], run, 30, MetricSplit::train, 2.25, std::nullopt, std::nullopt, 2010.0}});
  SweepProgress p = db.sweep_progress(sweep);
  EXPECT_EQ(p.total, 3);
  EXPECT_EQ(p.done, 1);
  EXPECT_EQ(p.running, 1);
  EXPECT_EQ(p.pending, 1);
  EXPECT_EQ(p.steps_total, 300);
  EXPECT_EQ(p.steps_done, 130);  // 100 (done) + 30 (running)
  ASSERT_EQ(p.running_cells.size(), 1u);
  const RunningCell& r = p.running_cells[0];
  EXPECT_EQ(r.key, "ega-s0");
  EXPECT_EQ(r.host, "gpu07");
  EXPECT_EQ(*r.step, 30);
  EXPECT_EQ(*r.loss, 2.25);
  EXPECT_DOUBLE_EQ(*r.steps_per_s, 2.0);
  // 170 steps left at 2 steps/s.
  ASSERT_TRUE(p.eta_s);
  EXPECT_DOUBLE_EQ(*p.eta_s, 85.0);
}

TEST(Lists, FiltersCombine) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  const auto ids = db.ensure_cells(sweep, {make_cell("base", 0), make_cell("base", 1), make_cell("ega", 0),
                                           make_cell("ega", 1)});
  db.finish_attempt(db.start_attempt(ids[3], info()), RunStatus::done, "", {});
  CellFilter f;
  f.variants = {"ega"};
  EXPECT_EQ(db.list_cells(f).size(), 2u);
  f.statuses = {"done"};
  ASSERT_EQ(db.list_cells(f).size(), 1u);
  EXPECT_EQ(db.list_cells(f)[0].seed, 1);
  CellFilter g;
  g.seeds = {0};
  g.sweeps = {"s"};
  EXPECT_EQ(db.list_cells(g).size(), 2u);
  g.sweeps = {"other"};
  EXPECT_TRUE(db.list_cells(g).empty());
  EXPECT_THROW(parse_cell_status("finished"), egm::ConfigError);
}

TEST(ReadOnlyDb, WriteMethodsAreRefused) {
  ScratchDir dir;
  const std::string path = dir.file("r.sqlite");
  { ResultsDb db(path, OpenMode::read_write_create); }
  const FileSnapshot before = FileSnapshot::of(path);
  {
    ResultsDb ro(path, OpenMode::read_only);
    EXPECT_TRUE(ro.read_only());
    EXPECT_THROW(ro.create_or_load_sweep("s", "{}", "h", false), egm::Error);
    EXPECT_THROW(ro.heartbeat(1), egm::Error);
    EXPECT_TRUE(ro.list_sweeps().empty());
  }
  EXPECT_TRUE(FileSnapshot::of(path).same_as(before));
}

}  // namespace
