// db/sweep_reads.h: the typed reads of a sweep on a small database written
// through ResultsDb, with a value stored as text the way a database edited
// elsewhere would hold it.
#include <gtest/gtest.h>

#include "db/sweep_reads.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm::db;
using egm::MetricSplit;
using egm::testing::make_cell;
using egm::testing::ScratchDir;

RunInfo cpu_info(int world_size) {
  RunInfo i;
  i.host = "node1";
  i.device = egm::parse_device_name("cpu");
  i.world_size = world_size;
  i.threads = 4;
  return i;
}

MetricPoint point(int64_t cell, int64_t run, int64_t step, MetricSplit split, std::optional<double> loss) {
  MetricPoint p;
  p.cell_id = cell;
  p.run_id = run;
  p.step = step;
  p.split = split;
  p.loss = loss;
  p.time = 1000 + static_cast<double>(step);
  return p;
}

struct Fixture {
  ScratchDir dir;
  ResultsDb db{dir.file("r.sqlite"), OpenMode::read_write_create};
  int64_t sweep = 0;
  std::vector<int64_t> cells;
  int64_t run = 0;
  Fixture() {
    sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
    cells = db.ensure_cells(sweep, {make_cell("base", 0), make_cell("ega", 0), make_cell("base", 1)});
    run = db.start_attempt(cells[1], cpu_info(2));
    db.record_metrics({point(cells[1], run, 10, MetricSplit::eval_val, 3.5),
                       point(cells[1], run, 20, MetricSplit::eval_val, std::nullopt),  // a NaN in training
                       point(cells[1], run, 30, MetricSplit::eval_val, 3.0),
                       point(cells[1], run, 30, MetricSplit::train, 2.9)});
    egm::RunOutcome done;
    done.step = 30;
    done.measured.final_val = 3.0;
    db.finish_done(run, done);
  }
};

TEST(SweepReads, CellsByKeyAndInSpecOrder) {
  Fixture f;
  EXPECT_EQ(find_cell(f.db, f.sweep, "ega-s0"), f.cells[1]);
  EXPECT_EQ(find_cell(f.db, f.sweep, "ega-s9"), std::nullopt);
  EXPECT_EQ(cell_ids(f.db, f.sweep), f.cells);
}

TEST(SweepReads, SplitLossesSkipNullAndText) {
  Fixture f;
  f.db.connection().execute("UPDATE metrics SET loss = 'abc' WHERE step = 10");
  const std::vector<LossPoint> points = split_losses(f.db, f.sweep, MetricSplit::eval_val);
  ASSERT_EQ(points.size(), 1u);  // step 10 is text, step 20 NULL; the train row is another split
  EXPECT_EQ(points[0].cell_id, f.cells[1]);
  EXPECT_EQ(points[0].step, 30);
  EXPECT_EQ(points[0].loss, 3.0);
  EXPECT_TRUE(split_losses(f.db, f.sweep, MetricSplit::val_full).empty());
}

TEST(SweepReads, AttemptComputeAndTheCellPageTables) {
  Fixture f;
  const std::vector<AttemptCompute> attempts = attempt_compute(f.db, f.sweep);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].variant, "ega");
  EXPECT_EQ(attempts[0].device, "cpu");
  EXPECT_EQ(attempts[0].world_size, 2);
  EXPECT_EQ(attempts[0].threads, 4);
  EXPECT_TRUE(attempts[0].ended_at.has_value());

  const Table metrics = cell_table(f.db, CellTable::metrics, f.cells[1]);
  EXPECT_EQ(metrics.columns,
            (std::vector<std::string>{"step", "split", "loss", "lr", "tokens_per_s", "attempt", "time"}));
  EXPECT_EQ(metrics.rows.size(), 4u);
  EXPECT_EQ(cell_table(f.db, CellTable::attempts, f.cells[1]).rows.size(), 1u);
  EXPECT_TRUE(cell_table(f.db, CellTable::attempts, f.cells[0]).rows.empty());
  EXPECT_EQ(parse_cell_download("events"), CellTable::events);
  EXPECT_EQ(parse_cell_download("learned"), std::nullopt);  // shown on the page, not a download
}

TEST(SweepReads, TensorBoardReadsRefuseTextWhereANumberBelongs) {
  Fixture f;
  const std::vector<CellEnd> ends = cell_ends(f.db, f.sweep);
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_TRUE(ends[1].done);
  EXPECT_EQ(ends[1].final_val, 3.0);
  EXPECT_EQ(ends[1].final_step, 30);
  EXPECT_FALSE(ends[0].done);
  std::vector<std::string> seen;
  for_each_metric(f.db, f.cells[1],
                  [&](const CellMetric& m) { seen.push_back(m.split + "@" + std::to_string(m.step)); });
  EXPECT_EQ(seen, (std::vector<std::string>{"eval_val@10", "eval_val@20", "eval_val@30", "train@30"}));

  f.db.connection().execute("UPDATE metrics SET loss = 'abc' WHERE step = 20");
  try {
    for_each_metric(f.db, f.cells[1], [](const CellMetric&) {});
    FAIL() << "a loss stored as text was read";
  } catch (const egm::DbError& e) {
    EXPECT_NE(std::string(e.what()).find("a loss of cell " + std::to_string(f.cells[1]) + " is stored as abc"),
              std::string::npos)
        << e.what();
  }
  f.db.connection().execute("UPDATE cells SET best_val = 'NaN' WHERE key = 'ega-s0'");
  EXPECT_THROW(cell_ends(f.db, f.sweep), egm::DbError);
}

}  // namespace
