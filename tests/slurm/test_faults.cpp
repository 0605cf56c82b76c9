// Faults a run meets on a cluster (issue 6, "Faults"): a full disk while
// writing a checkpoint or the results database. Each test mounts a small
// tmpfs (needs root, as in the test containers; skipped otherwise), fills it,
// and checks the write fails with a clear error and leaves nothing
// half-written: the previous checkpoint still loads, the database still has
// exactly what was committed before and passes SQLite's integrity check.
// Also: every checkpoint of a run damaged -> the run restarts from scratch and
// says so. (One damaged checkpoint falling back to the previous one, NaN
// losses and worker exceptions are tested in tests/train and tests/sweep.)
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "config/run_config.h"
#include "data/corpus.h"
#include "db/results_db.h"
#include "train/checkpoint.h"
#include "train/metrics_sink.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"
#include "word_corpus.h"

namespace fs = std::filesystem;

namespace {

// A tmpfs of `bytes` at a fresh temp folder, unmounted and removed at the end.
class SmallDisk {
 public:
  explicit SmallDisk(std::size_t bytes) {
    std::string tmpl = (fs::temp_directory_path() / "egm-fulldisk.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return;
    path_ = tmpl;
    const std::string options = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      error_ = std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  std::string path(const std::string& name) const { return path_ + "/" + name; }

  // Writes `name` until the disk is full; returns the bytes written.
  std::size_t fill(const std::string& name) const {
    std::FILE* f = std::fopen(path(name).c_str(), "wb");
    EXPECT_NE(f, nullptr);
    if (f == nullptr) return 0;
    std::setvbuf(f, nullptr, _IONBF, 0);
    const std::string block(4096, 'x');
    std::size_t written = 0;
    while (true) {
      const std::size_t n = std::fwrite(block.data(), 1, block.size(), f);
      written += n;
      if (n < block.size()) break;
    }
    std::fclose(f);
    return written;
  }

 private:
  std::string path_;
  std::string error_ = "not created";
  bool mounted_ = false;
};

#define REQUIRE_SMALL_DISK(disk)                                                                    \
  if (!(disk).mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << (disk).error()

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

struct TinyModel {
  torch::nn::Linear layer{64, 64};
  torch::optim::AdamW optimizer{layer->parameters(), torch::optim::AdamWOptions(1e-3)};
  // One optimiser step, so the checkpoint holds Adam's moments too.
  void step() {
    optimizer.zero_grad();
    layer->forward(torch::randn({8, 64})).pow(2).sum().backward();
    optimizer.step();
  }
};

}  // namespace

// The checkpoint of step 3 does not fit: save_checkpoint throws a clear
// IoError, no temp or staged file is left, and the step-2 checkpoint (and the
// step-1 one behind it) still load, with the step-2 weights.
TEST(DiskFull, CheckpointFailsCleanlyAndThePreviousOneStillLoads) {
  SmallDisk disk(512 * 1024);
  REQUIRE_SMALL_DISK(disk);
  const std::string run_dir = disk.path("run");
  const std::vector<torch::Device> cpu{torch::Device(torch::kCPU)};
  TinyModel model;
  egm::TrainState state;
  for (int64_t step : {1, 2}) {
    model.step();
    state.step = step;
    egm::save_checkpoint(run_dir, *model.layer, model.optimizer, state, "cfg", cpu);
  }
  const torch::Tensor weights_at_2 = model.layer->weight.detach().clone();
  const std::set<std::string> before = names_in(run_dir);
  EXPECT_EQ(before, (std::set<std::string>{"checkpoint.egmc", "checkpoint.prev.egmc"}));

  EXPECT_GT(disk.fill("filler"), 0u);
  model.step();
  state.step = 3;
  try {
    egm::save_checkpoint(run_dir, *model.layer, model.optimizer, state, "cfg", cpu);
    FAIL() << "a checkpoint was written to a full disk";
  } catch (const egm::IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
    EXPECT_NE(what.find("the disk is full"), std::string::npos) << what;
  }
  EXPECT_EQ(names_in(run_dir), before) << "a temp or staged checkpoint file was left behind";
  const auto paths = egm::checkpoint_paths(run_dir);
  EXPECT_EQ(egm::read_checkpoint_header(paths.current)["step"], 2);
  EXPECT_EQ(egm::read_checkpoint_header(paths.previous)["step"], 1);

  TinyModel fresh;
  std::vector<std::string> problems;
  auto loaded = egm::load_checkpoint(run_dir, *fresh.layer, fresh.optimizer, "cfg", cpu, &problems);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(loaded->state.step, 2);
  EXPECT_TRUE(torch::equal(fresh.layer->weight, weights_at_2));

  // Space freed: the next checkpoint is written and rotated as usual.
  fs::remove(disk.path("filler"));
  egm::save_checkpoint(run_dir, *model.layer, model.optimizer, state, "cfg", cpu);
  EXPECT_EQ(egm::read_checkpoint_header(paths.current)["step"], 3);
  EXPECT_EQ(egm::read_checkpoint_header(paths.previous)["step"], 2);
}

namespace {

egm::db::MetricPoint point(int64_t cell, int64_t run, int64_t step) {
  egm::db::MetricPoint p;
  p.cell_id = cell;
  p.run_id = run;
  p.step = step;
  p.split = egm::MetricSplit::train;
  p.loss = 1.0 / static_cast<double>(step);
  p.time = 1000.0 + static_cast<double>(step);
  return p;
}

int64_t count_metrics(egm::db::ResultsDb& db) {
  auto s = db.connection().prepare("SELECT count(*) FROM metrics");
  EXPECT_TRUE(s.step());
  return s.int64(0);
}

}  // namespace

// A batch of metrics that does not fit: record_metrics throws a DbError that
// says the disk is full; the batch is all absent (one transaction), what was
// committed before is all there, the file passes integrity_check, and once
// space is freed the same connection writes again.
TEST(DiskFull, DatabaseWriteFailsWholeAndLeavesTheFileIntact) {
  // Room for the migrated empty database and its WAL (16 KiB pages since schema
  // v5: about 0.8 MB before the first checkpoint); the filler takes the rest.
  SmallDisk disk(4 * 1024 * 1024);
  REQUIRE_SMALL_DISK(disk);
  const std::string path = disk.path("results.sqlite");
  using namespace egm::db;
  int64_t cell = 0, run = 0;
  {
    ResultsDb db(path, OpenMode::read_write_create);
    const SweepOpenResult sweep = db.create_or_load_sweep("full", "{}", "hash", false);
    CellInput input;
    input.key = "base-s0", input.variant = "base", input.seed = 0, input.config_json = "{}";
    input.config_hash = "c", input.max_steps = 100000;
    cell = db.ensure_cells(sweep.sweep.id, {input}).at(0);
    RunInfo info;
    info.host = "host";
    run = db.start_attempt(cell, info);
    std::vector<MetricPoint> first;
    for (int64_t step = 1; step <= 10; ++step) first.push_back(point(cell, run, step));
    db.record_metrics(first);
  }
  ResultsDb db(path, OpenMode::read_write);
  EXPECT_GT(disk.fill("filler"), 0u);
  std::vector<MetricPoint> big;
  for (int64_t step = 11; step <= 20000; ++step) big.push_back(point(cell, run, step));
  try {
    db.record_metrics(big);
    FAIL() << "20000 metric rows were written to a full disk";
  } catch (const egm::DbError& e) {
    EXPECT_NE(std::string(e.what()).find("disk is full"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(db.connection().in_transaction()) << "the failed write left a transaction open";
  EXPECT_EQ(count_metrics(db), 10);

  fs::remove(disk.path("filler"));
  db.record_metrics({point(cell, run, 11)});
  EXPECT_EQ(count_metrics(db), 11);
  ResultsDb reader(path, OpenMode::read_only);
  auto check = reader.connection().prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.text(0), "ok");
  EXPECT_EQ(count_metrics(reader), 11);
  EXPECT_EQ(reader.run(run).status, RunStatus::running);
}

namespace {

// A small corpus with structure to learn, made here (no file needed).
const egm::Corpus& word_corpus() {
  static const egm::Corpus corpus = egm::test::word_corpus(99);
  return corpus;
}

egm::RunConfig tiny_config() {
  egm::RunConfig c = egm::preset_config("tiny");
  c.model.variant = "base";
  c.model.vocab_size = word_corpus().vocab_size();
  c.train.seed = 8;
  c.train.max_steps = 30;
  c.train.eval_interval = 10;
  c.train.eval_batches = 2;
  c.train.ar_eval_windows = 0;
  c.train.full_val_eval = false;
  return c;
}

egm::RuntimeOptions runtime_in(const std::string& dir) {
  egm::RuntimeOptions r;
  r.threads = 1;
  r.out_dir = dir;
  r.log_interval = 1;
  return r;
}

int count_events(const egm::MemorySink& sink, egm::TrainerEvent event) {
  int n = 0;
  for (const egm::EventRecord& e : sink.of<egm::EventRecord>()) n += e.event == event;
  return n;
}

}  // namespace

// Both checkpoints of a run damaged (one bit-flipped, one truncated): the
// trainer skips each with a checkpoint_skipped event, says
// restart_from_scratch, and trains from step 0 -- the same trajectory as a
// run that never had a checkpoint (CPU training is bitwise reproducible).
TEST(DamagedCheckpoints, AllBadRestartsFromScratchAndSaysSo) {
  const fs::path dir = fs::temp_directory_path() / ("egm_faults_scratch_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  egm::MemorySink first;
  int polls = 0;
  // Checkpoints at the evals of steps 10 and 20, then one where it stops (25).
  egm::Trainer(tiny_config(), runtime_in(dir.string()), word_corpus(), first).run([&] { return ++polls > 25; });
  const auto paths = egm::checkpoint_paths(dir.string());
  ASSERT_EQ(egm::read_checkpoint_header(paths.current)["step"], 25);
  ASSERT_EQ(egm::read_checkpoint_header(paths.previous)["step"], 20);
  std::string current = egm::read_file(paths.current), previous = egm::read_file(paths.previous);
  current[current.size() - 50] ^= 0x01;
  previous.resize(previous.size() - 1000);
  std::ofstream(paths.current, std::ios::binary | std::ios::trunc) << current;
  std::ofstream(paths.previous, std::ios::binary | std::ios::trunc) << previous;

  egm::MemorySink resumed;
  const egm::RunOutcome r = egm::Trainer(tiny_config(), runtime_in(dir.string()), word_corpus(), resumed).run();
  EXPECT_EQ(r.status, egm::Outcome::done);
  EXPECT_FALSE(r.resumed_from_step) << "a damaged checkpoint was loaded";
  EXPECT_EQ(count_events(resumed, egm::TrainerEvent::checkpoint_skipped), 2);
  EXPECT_EQ(count_events(resumed, egm::TrainerEvent::restart_from_scratch), 1);
  EXPECT_EQ(count_events(resumed, egm::TrainerEvent::resumed), 0);

  egm::MemorySink fresh_sink;
  const egm::RunOutcome fresh = egm::Trainer(tiny_config(), runtime_in(""), word_corpus(), fresh_sink).run();
  ASSERT_TRUE(fresh.measured.final_val);
  EXPECT_EQ(r.measured.final_val, fresh.measured.final_val) << "the restart did not train from step 0 like a fresh run";
  fs::remove_all(dir);
}
