// The compute statement against totals worked out by hand from a small
// database whose attempts have known times, devices, world sizes and threads.
#include <gtest/gtest.h>

#include "analysis/compute.h"
#include "db/results_db.h"
#include "test_helpers.h"
#include "util/error.h"

namespace egm::analysis {
namespace {

// base: CPU 2 threads x 1 rank for 30 s, then 4 threads x 2 ranks for 60 s  -> 60 + 480 core-s
// ega:  H200 x 1 for 3600 s, then A100 x 2 for 1800 s                       -> 3600 + 3600 GPU-s
// mope: CPU without a thread count for 100 s (counted at 1), and one attempt still running
// ega_mope: CPU 1 thread for 10 s
// Total: 6 finished runs, 650 core-s, 1 GPU-hour on each GPU, 1 running.
std::string write_compute_fixture(testing::ScratchDir& dir) {
  const std::string path = dir.file("compute.sqlite");
  db::ResultsDb db(path, db::OpenMode::read_write_create);
  double now = 1000;
  db.set_clock([&] { return now; });
  const int64_t sweep = db.create_or_load_sweep("c", "{}", "h", false).sweep.id;
  std::vector<db::CellInput> cells;
  for (const char* v : {"base", "ega", "mope", "ega_mope"}) cells.push_back(testing::make_cell(v, 1, 100, 3));
  const std::vector<int64_t> id = db.ensure_cells(sweep, cells);
  auto attempt = [&](int64_t cell, const std::string& device, int world, std::optional<int64_t> threads,
                     std::optional<std::string> gpu, double seconds, bool finish = true) {
    db::RunInfo info;
    info.host = "h";
    info.device = parse_device_name(device);
    info.world_size = world;
    info.threads = threads;
    info.gpu_name = gpu;
    const int64_t run = db.start_attempt(cell, info);
    now += seconds;
    if (finish) db.finish_attempt(run, db::RunStatus::interrupted, "stopped");
    now += 5;
  };
  attempt(id[0], "cpu", 1, 2, {}, 30);
  attempt(id[0], "cpu", 2, 4, {}, 60);
  attempt(id[1], "cuda:0", 1, 1, std::string("NVIDIA H200"), 3600);
  attempt(id[1], "cuda:1", 2, 1, std::string("A100"), 1800);
  attempt(id[2], "cpu", 1, std::nullopt, {}, 100);
  attempt(id[3], "cpu", 1, 1, {}, 10);
  attempt(id[2], "cpu", 1, 1, {}, 50, /*finish=*/false);
  return path;
}

TEST(Compute, HandWorkedTotals) {
  testing::ScratchDir dir;
  const std::string path = write_compute_fixture(dir);
  db::ResultsDb db(path, db::OpenMode::read_only);
  const ComputeStatement s =
      compute_statement(db, "c", {{"delta(ega)", {"base", "ega"}},
                                  {"interaction", {"ega", "mope", "ega_mope", "base"}}});
  EXPECT_EQ(s.total.runs, 6);
  EXPECT_EQ(s.total.running, 1);
  EXPECT_DOUBLE_EQ(s.total.core_seconds, 650);
  EXPECT_DOUBLE_EQ(s.total.gpu_seconds.at("NVIDIA H200"), 3600);
  EXPECT_DOUBLE_EQ(s.total.gpu_seconds.at("A100"), 3600);
  EXPECT_EQ(s.total.runs_without_threads, 1);
  ASSERT_EQ(s.variants.size(), 4u);
  EXPECT_EQ(s.variants[0].first, "base");
  EXPECT_DOUBLE_EQ(s.variants[0].second.core_seconds, 540);
  EXPECT_EQ(s.variants[2].second.running, 1);
  ASSERT_EQ(s.claims.size(), 2u);
  EXPECT_EQ(s.claims[0].second.runs, 4);
  EXPECT_DOUBLE_EQ(s.claims[0].second.core_seconds, 540);
  EXPECT_DOUBLE_EQ(s.claims[0].second.gpu_seconds.at("A100"), 3600);
  EXPECT_EQ(s.claims[1].second.runs, 6);
  EXPECT_EQ(s.cells.size(), 4u);
  EXPECT_DOUBLE_EQ(s.cells.begin()->second.core_seconds, 540);

  // 650 core-s = 0.1806 core-hours: two significant digits.
  EXPECT_EQ(compute_line(s.total),
            "6 runs, 1.0 GPU-hours on A100; 1.0 GPU-hours on NVIDIA H200; 0.18 core-hours of CPU "
            "(1 CPU run without a recorded thread count, counted at 1 thread); 1 still running, not counted");
  EXPECT_EQ(compute_line(s.variants[0].second), "2 runs, 0.15 core-hours of CPU");
  const std::string text = render_compute_text(s);
  EXPECT_EQ(text.substr(0, text.find('\n')), "compute: this table: " + compute_line(s.total));
  EXPECT_NE(text.find("  delta(ega): 4 runs, 1.0 GPU-hours on A100; 1.0 GPU-hours on NVIDIA H200; 0.15 core-hours"),
            std::string::npos)
      << text;
  const db::Table t = compute_table(s);
  ASSERT_EQ(t.rows.size(), 1u + 2 + 4);
  EXPECT_EQ(std::get<double>(t.rows[0][5]), 2.0);  // gpu_hours of the sweep
  EXPECT_THROW(compute_statement(db, "nope"), ConfigError);
}

}  // namespace
}  // namespace egm::analysis
