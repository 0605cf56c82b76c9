// The coordinator's pure parts: trainer records -> database rows, the
// test-only failure injection, the live view's formatting and ETA, and the
// end-of-sweep summary. Expected values are written out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "coordinator/failure_injection.h"
#include "coordinator/live_view.h"
#include "coordinator/record_mapping.h"
#include "analysis/render.h"
#include "coordinator/summary.h"
#include "db/results_db.h"
#include "spec/experiment_spec.h"
#include "fixture.h"
#include "util/error.h"

namespace ec = egm::coordinator;
using nlohmann::json;

// Records as a worker's RECORDS message carries them, decoded as the protocol does.
std::vector<egm::Record> decoded(const std::vector<json>& records) {
  std::vector<egm::Record> out;
  for (const json& r : records) out.push_back(egm::record_from_json(r));
  return out;
}

TEST(RecordMapping, EveryTrainerRecordKindBecomesItsRows) {
  const std::vector<egm::Record> records = decoded({
      {{"kind", "status"}, {"status", "running"}, {"step", 0}, {"time", 99.0}, {"world_size", 2},
       {"backend", "nccl"}, {"device", "cuda:1"}},
      {{"kind", "progress"}, {"step", 10}, {"train_loss", 2.5}, {"lr", 0.001}, {"tokens_per_s", 5000.0},
       {"elapsed_s", 1.0}, {"time", 100.0}},
      {{"kind", "progress"}, {"step", 20}, {"train_loss", nullptr}, {"lr", 0.002}, {"tokens_per_s", 6000.0},
       {"time", 101.0}},
      {{"kind", "eval"}, {"step", 20}, {"split", "eval_val"}, {"loss", 2.25}, {"time", 102.0}},
      {{"kind", "params"}, {"step", 20}, {"time", 103.0},
       {"params", {{{"module", "mope"}, {"layer", -1}, {"index", 3}, {"name", "sigma"}, {"value", 0.75}},
                   {{"module", "ega"}, {"layer", 1}, {"index", 0}, {"name", "tau"}, {"value", -0.5}}}}},
      {{"kind", "checkpoint"}, {"step", 20}, {"time", 104.0}},
      {{"kind", "event"}, {"event", "resumed"}, {"step", 20}, {"path", "/r/checkpoint.egmc"},
       {"message", "resumed from the latest checkpoint"}, {"time", 105.0}},
      {{"kind", "final_eval"}, {"split", "val_full"}, {"loss", 1.875}, {"windows", 7}, {"time", 106.0}},
  });
  const ec::MappedRecords m = ec::map_records(records, {/*sweep*/ 1, /*cell*/ 2, /*run*/ 3, /*final_step*/ 60});

  ASSERT_EQ(m.batch.metrics.size(), 4u);
  const auto& p = m.batch.metrics[0];
  EXPECT_EQ(p.split, egm::MetricSplit::train);
  EXPECT_EQ(p.step, 10);
  EXPECT_EQ(p.cell_id, 2);
  EXPECT_EQ(p.run_id, 3);
  EXPECT_EQ(*p.loss, 2.5);
  EXPECT_EQ(*p.lr, 0.001);
  EXPECT_EQ(*p.tokens_per_s, 5000.0);
  EXPECT_EQ(p.time, 100.0);
  EXPECT_FALSE(m.batch.metrics[1].loss);  // NaN travels as null and is stored as NULL
  EXPECT_EQ(m.batch.metrics[2].split, egm::MetricSplit::eval_val);
  EXPECT_EQ(*m.batch.metrics[2].loss, 2.25);
  EXPECT_EQ(m.batch.metrics[3].split, egm::MetricSplit::val_full);
  EXPECT_EQ(m.batch.metrics[3].step, 60);  // final measurements belong to the final step
  EXPECT_EQ(*m.batch.metrics[3].loss, 1.875);

  ASSERT_EQ(m.batch.params.size(), 2u);
  EXPECT_EQ(m.batch.params[0].module, "mope");
  EXPECT_EQ(m.batch.params[0].layer, -1);
  EXPECT_EQ(m.batch.params[0].idx, 3);
  EXPECT_EQ(m.batch.params[0].name, "sigma");
  EXPECT_EQ(m.batch.params[0].value, 0.75);
  EXPECT_EQ(m.batch.params[0].step, 20);
  EXPECT_EQ(m.batch.params[1].layer, 1);
  EXPECT_EQ(m.batch.params[1].value, -0.5);

  ASSERT_EQ(m.batch.events.size(), 2u);
  EXPECT_EQ(m.batch.events[0].kind, egm::db::EventKind::checkpoint);
  EXPECT_EQ(m.batch.events[0].step, 20);
  EXPECT_EQ(m.batch.events[0].message, "checkpoint at step 20");
  EXPECT_EQ(*m.batch.events[0].run_id, 3);
  EXPECT_EQ(m.batch.events[1].kind, egm::db::EventKind::resumed);
  EXPECT_EQ(m.batch.events[1].step, 20);
  EXPECT_EQ(m.batch.events[1].message, "resumed from the latest checkpoint (step 20): /r/checkpoint.egmc");
  EXPECT_EQ(*m.resumed_from_step, 20);
  EXPECT_EQ(*m.checkpoint_step, 20);
  ASSERT_TRUE(m.progress);
  EXPECT_EQ(m.progress->step, 20);
  EXPECT_EQ(*m.progress->tokens_per_s, 6000.0);
  // The start record: what the worker really runs with, for the runs row.
  ASSERT_TRUE(m.setup);
  EXPECT_EQ(m.setup->world_size, 2);
  EXPECT_EQ(m.setup->backend, egm::Backend::nccl);
  EXPECT_EQ(m.setup->device, egm::parse_device_name("cuda:1"));
}

TEST(RecordMapping, AKnownKindWithoutItsFieldsIsAProtocolError) {
  EXPECT_THROW(decoded({{{"kind", "eval"}, {"split", "eval_val"}}}), egm::ProtocolError);
  EXPECT_THROW(decoded({{{"step", 1}}}), egm::ProtocolError);
  // A split the trainer does not write is not stored under a made-up name.
  EXPECT_THROW(decoded({{{"kind", "eval"}, {"step", 1}, {"split", "eval_test"}, {"loss", 1.0}}}), egm::ProtocolError);
  EXPECT_THROW(decoded({{{"kind", "final_eval"}, {"split", "val"}, {"loss", 1.0}}}), egm::ProtocolError);
}

TEST(FailureInjection, ParsesEntriesAndMatchesTheFirstAttempts) {
  const auto f = ec::parse_injected_failures("ega:1:15:2,ega_mope:0:3:1");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].variant, "ega");
  EXPECT_EQ(f[0].seed, 1u);
  EXPECT_EQ(f[0].step, 15);
  EXPECT_EQ(f[0].attempts, 2);
  EXPECT_EQ(ec::injected_fail_step(f, "ega", 1, 1), 15);
  EXPECT_EQ(ec::injected_fail_step(f, "ega", 1, 2), 15);
  EXPECT_EQ(ec::injected_fail_step(f, "ega", 1, 3), -1);
  EXPECT_EQ(ec::injected_fail_step(f, "ega", 0, 1), -1);
  EXPECT_EQ(ec::injected_fail_step(f, "ega_mope", 0, 1), 3);
  EXPECT_TRUE(ec::parse_injected_failures("").empty());
  EXPECT_THROW(ec::parse_injected_failures("ega:1:15"), egm::ConfigError);
  EXPECT_THROW(ec::parse_injected_failures("ega:x:15:1"), egm::ConfigError);
  EXPECT_THROW(ec::parse_injected_failures("ega:1:-3:1"), egm::ConfigError);
  // An optional fifth field says what kind of failure it is.
  EXPECT_EQ(ec::injected_fail_kind(f, "ega", 1, 1), "error");
  const auto kinds = ec::parse_injected_failures("base:0:0:9:config,mope:1:5:1:oom");
  EXPECT_EQ(ec::injected_fail_kind(kinds, "base", 0, 3), "config");
  EXPECT_EQ(ec::injected_fail_kind(kinds, "mope", 1, 1), "oom");
  EXPECT_EQ(ec::injected_fail_kind(kinds, "mope", 1, 2), "error");  // not injected on attempt 2
  EXPECT_THROW(ec::parse_injected_failures("ega:1:15:1:segfault"), egm::ConfigError);
}

TEST(LiveView, FormatsDurationsRatesAndBars) {
  EXPECT_EQ(ec::format_duration_short(45.4), "45s");
  EXPECT_EQ(ec::format_duration_short(75), "1m15s");
  EXPECT_EQ(ec::format_duration_short(7500), "2h05m");
  EXPECT_EQ(ec::format_duration_short(std::nullopt), "?");
  EXPECT_EQ(ec::format_duration_short(NAN), "?");
  EXPECT_EQ(ec::format_rate(950), "950");
  EXPECT_EQ(ec::format_rate(12345), "12.3k");
  EXPECT_EQ(ec::format_rate(1.2e6), "1.20M");
  EXPECT_EQ(ec::progress_bar(0.5, 10), "[#####-----]");
  EXPECT_EQ(ec::progress_bar(1.5, 4), "[####]");
  EXPECT_EQ(ec::progress_bar(0, 3), "[---]");
}

TEST(LiveView, BlockAndPlainLineShowCountsAndRunningCells) {
  ec::SweepView v;
  v.sweep = "quick";
  v.total = 12;
  v.pending = 7;
  v.running = 2;
  v.done = 3;
  v.failed = 0;
  v.fraction = 0.25;
  v.eta_s = 90;
  v.elapsed_s = 30;
  ec::CellLine c;
  c.key = "ega-s1";
  c.variant = "ega";
  c.seed = 1;
  c.worker = 2;
  c.step = 340;
  c.max_steps = 1500;
  c.loss = 1.93214;
  c.tokens_per_s = 48200;
  c.eta_s = 72;
  v.cells = {c};
  const auto block = ec::render_block(v, 0);
  ASSERT_EQ(block.size(), 3u);
  EXPECT_EQ(block[0], "sweep quick");
  EXPECT_NE(block[1].find(" 25.0%  3 done  2 running  7 pending  0 failed  of 12"), std::string::npos) << block[1];
  EXPECT_NE(block[1].find("ETA 1m30s"), std::string::npos) << block[1];
  EXPECT_NE(block[2].find("ega"), std::string::npos);
  EXPECT_NE(block[2].find("340/1500"), std::string::npos) << block[2];
  EXPECT_NE(block[2].find("loss 1.9321"), std::string::npos) << block[2];
  EXPECT_NE(block[2].find("48.2k tok/s"), std::string::npos) << block[2];
  EXPECT_NE(block[2].find("ETA 1m12s"), std::string::npos) << block[2];
  EXPECT_LE(ec::render_block(v, 40)[2].size(), 40u);
  const std::string plain = ec::render_plain_line(v);
  EXPECT_NE(plain.find("[quick] 25.0%  done 3  running 2  pending 7  failed 0  of 12"), std::string::npos) << plain;
  EXPECT_NE(plain.find("| ega-s1 340/1500 loss 1.9321"), std::string::npos) << plain;
  EXPECT_THROW(ec::parse_view_mode("fancy"), egm::ConfigError);
}

// A sweep ends with the analysis's headline (the same egm analyze prints
// first), or with one line saying why there is none; then the cells that
// failed for good.
TEST(Summary, TheAnalysisHeadlineThenTheCellsFailedForGood) {
  const std::string path = ::testing::TempDir() + "egm_test_summary.sqlite";
  std::remove(path.c_str());
  egm::db::ResultsDb db(path, egm::db::OpenMode::read_write_create);
  egm::testing::write_fixture(db);
  egm::db::CellRow failed;
  failed.key = "ega-s2";
  failed.variant = "ega";
  failed.status = egm::db::CellStatus::failed;
  failed.failures = 2;
  failed.max_attempts = 2;
  failed.last_error = "injected failure at step 5";
  egm::db::CellRow retried = failed;
  retried.key = "ega-s3";
  retried.max_attempts = 3;  // a retry is left: not failed for good
  const std::vector<egm::db::CellRow> cells = {failed, retried};
  const auto lines = ec::failed_cell_lines(cells);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "ega-s2: failed 2 times, no retries left: injected failure at step 5");

  auto printed = [&](const std::string& name) {
    egm::spec::ExperimentSpec spec = egm::spec::parse_spec(
        R"({"name": "x", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1]})");
    spec.name = name;
    std::FILE* f = std::tmpfile();
    ec::print_sweep_summary(db, cells, spec, f);
    std::rewind(f);
    std::string text;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    return text;
  };
  const std::string failed_text = "\n1 cell failed for good:\n  " + lines[0] + "\n";
  EXPECT_EQ(printed("fixture"), "\n" + egm::analysis::render_headline(db, "fixture") + failed_text);
  const std::string none = printed("nothing_here");
  EXPECT_EQ(none.rfind("\nno analysis of sweep nothing_here: ", 0), 0u) << none;
  EXPECT_NE(none.find(failed_text), std::string::npos) << none;
}

// The one addition this component made to the results database: the step an
// attempt resumed from, known only once the worker has loaded its checkpoint.
TEST(ResultsDbResume, SetResumedFromStepFillsTheRunningAttempt) {
  const std::string path = ::testing::TempDir() + "egm_test_resumed_from_step.sqlite";
  std::remove(path.c_str());
  egm::db::ResultsDb db(path, egm::db::OpenMode::read_write_create);
  const auto sweep = db.create_or_load_sweep("s", "{}", "hash", false);
  egm::db::CellInput cell;
  cell.key = "base-s0";
  cell.variant = "base";
  cell.config_json = "{}";
  cell.config_hash = "h";
  cell.max_steps = 100;
  const int64_t cell_id = db.ensure_cells(sweep.sweep.id, {cell}).at(0);
  const int64_t run_id = db.start_attempt(cell_id, {});
  EXPECT_FALSE(db.run(run_id).info.resumed_from_step);
  db.set_resumed_from_step(run_id, 40);
  EXPECT_EQ(*db.run(run_id).info.resumed_from_step, 40);
  EXPECT_THROW(db.set_resumed_from_step(run_id + 1, 40), egm::DbError);
  std::remove(path.c_str());
}

TEST(RecordMapping, LongRunsKeepAboutKMaxTrainPointsTrainPoints) {
  // Up to log_interval x kMaxTrainPoints steps every progress record is kept.
  EXPECT_EQ(ec::train_stride(60, 10), 1);
  EXPECT_EQ(ec::train_stride(10 * ec::kMaxTrainPoints, 10), 1);
  // Beyond, a multiple of log_interval that keeps at most kMaxTrainPoints.
  EXPECT_EQ(ec::train_stride(10 * ec::kMaxTrainPoints + 1, 10), 20);
  EXPECT_EQ(ec::train_stride(5000, 10), 50);
  EXPECT_EQ(ec::train_stride(5000, 7), 7 * 8);
  for (int64_t steps : {1001, 5000, 12345, 100000}) {
    const int64_t stride = ec::train_stride(steps, 10);
    EXPECT_EQ(stride % 10, 0) << steps;
    EXPECT_LE(steps / stride, ec::kMaxTrainPoints) << steps;
  }

  // A 5,000-step run's progress every 10 steps: the multiples of 50 and the final step.
  std::vector<nlohmann::json> records;
  for (int64_t s = 10; s <= 5000; s += 10)
    records.push_back({{"kind", "progress"}, {"step", s}, {"train_loss", 2.0}, {"time", 1.0}});
  records.push_back({{"kind", "eval"}, {"step", 5000}, {"split", "eval_val"}, {"loss", 1.5}});
  const ec::MappedRecords m =
      ec::map_records(decoded(records), {/*sweep*/ 1, /*cell*/ 2, /*run*/ 3, /*final_step*/ 5000, ec::train_stride(5000, 10)});
  int64_t train = 0;
  for (const auto& p : m.batch.metrics) {
    if (p.split != egm::MetricSplit::train) continue;
    ++train;
    EXPECT_EQ(p.step % 50, 0) << p.step;
  }
  EXPECT_EQ(train, 100);
  EXPECT_EQ(m.batch.metrics.back().split, egm::MetricSplit::eval_val);  // evals are all kept
  ASSERT_TRUE(m.progress);
  EXPECT_EQ(m.progress->step, 5000);  // the live view sees the latest record

  // A final step off the stride is kept too (a resumed run records the same steps).
  const ec::MappedRecords odd = ec::map_records(
      decoded({{{"kind", "progress"}, {"step", 4990}, {"time", 1.0}}, {{"kind", "progress"}, {"step", 4995}, {"time", 1.0}}}),
      {1, 2, 3, /*final_step*/ 4995, ec::train_stride(4995, 10)});
  ASSERT_EQ(odd.batch.metrics.size(), 1u);
  EXPECT_EQ(odd.batch.metrics[0].step, 4995);
}
