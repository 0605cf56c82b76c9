// The --until loop (src/sequential/loop.h) behind a fake launcher: each launch
// opens the sweep as the coordinator would (spec::open_sweep with the
// request's --extend / --new-sweep) and writes every cell to run as done,
// with a final loss the test chooses; stop signals and failures are scripted.
// Every look is real: the analysis, the sequences and the looks table.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "../db/test_helpers.h"
#include "db/results_db.h"
#include "run/outcome.h"
#include "sequential/look.h"
#include "sequential/loop.h"
#include "spec/experiment_spec.h"
#include "spec/sweep_setup.h"
#include "util/stop_signal.h"

namespace {

using namespace egm;
using namespace egm::sequential;
using egm::testing::ScratchDir;

// A launcher that runs no process: the cells' results come from `loss`.
struct FakeLauncher : Launcher {
  std::string db_path;
  std::function<double(const std::string& variant, uint64_t seed)> loss;
  // Called at a launch's start (the number of the launch, from 1): may set
  // `stop` (a signal during the launch) and return an exit status to end the
  // launch there without running any cell; nullopt runs the cells.
  std::function<std::optional<int>(int launch)> script;
  // Set after the cells are written (a signal that comes as the launch ends, before the look).
  std::function<void(int launch)> after;
  std::vector<LaunchRequest> requests;
  int stop = 0;

  int launch(const LaunchRequest& r) override {
    requests.push_back(r);
    const int n = static_cast<int>(requests.size());
    if (script)
      if (std::optional<int> status = script(n)) return *status;
    spec::SweepSetup s = spec::open_sweep(r.spec_path, db_path, spec::changed_spec(r.new_sweep, r.extend));
    db::RunInfo info;
    info.host = "fake";
    for (const db::CellRow& c : s.db.cells_to_run(s.sweep.sweep.id)) {
      const int64_t run = s.db.start_attempt(c.id, info);
      RunOutcome done;
      done.step = c.max_steps;
      done.measured.final_val = loss(c.variant, static_cast<uint64_t>(c.seed));
      s.db.finish_done(run, done);
    }
    s.db.set_sweep_status(s.sweep.sweep.id, db::SweepStatus::done);
    if (after) after(n);
    return 0;
  }
  int stop_signal() const override { return stop; }
};

struct LoopTest : ::testing::Test {
  ScratchDir dir;
  std::string db_path = dir.file("egm.sqlite");
  FakeLauncher launcher;
  std::ostringstream out;

  void SetUp() override {
    launcher.db_path = db_path;
    // ega ~0.3 nats below base with a little spread: settled after a few seeds.
    launcher.loss = [](const std::string& variant, uint64_t seed) {
      return variant == "ega" ? 1.7 + 0.02 * static_cast<double>(seed % 3) : 2.0 + 0.01 * static_cast<double>(seed % 2);
    };
  }

  // A spec file of base and ega with these seeds (and `extra` variants).
  std::string spec_file(const std::vector<uint64_t>& seeds, const std::vector<std::string>& extra = {}) {
    nlohmann::json j = {{"name", "seq"}, {"preset", "tiny"}, {"variants", {"base", "ega"}}, {"seeds", seeds},
                        {"steps", 2}};
    for (const auto& v : extra) j["variants"].push_back(v);
    const std::string path = dir.file("seq.json");
    std::ofstream(path) << j.dump(2);
    return path;
  }

  UntilRun run_of(const std::string& spec_path, int64_t max_seeds, double alpha = 0.05) {
    UntilRun r;
    r.spec = spec::load_spec(spec_path);
    r.spec_path = spec_path;
    r.db_path = db_path;
    r.options.claims = "ega";
    r.options.max_seeds = max_seeds;
    r.options.alpha = alpha;
    r.claims = check_until(r.options, r.spec);
    return r;
  }

  std::vector<db::LookRow> looks() {
    db::ResultsDb db(db_path, db::OpenMode::read_only);
    return db.list_looks(db.find_sweep("seq")->id);
  }
  std::vector<uint64_t> stored_seeds() {
    db::ResultsDb db(db_path, db::OpenMode::read_only);
    return spec::read_stored_spec(db.find_sweep("seq")->spec_json).seeds;
  }
};

TEST_F(LoopTest, AClaimSettledEarlyStopsBeforeTheBudget) {
  const UntilRun r = run_of(spec_file({0, 1}), 40);
  ASSERT_EQ(run_until(r, launcher, out), 0) << out.str();
  const std::vector<db::LookRow> l = looks();
  ASSERT_FALSE(l.empty());
  EXPECT_TRUE(l.back().settled);
  EXPECT_EQ(l.back().decision, "positive") << out.str();  // base - ega > 0: ega is better
  EXPECT_EQ(l.back().next, "stopped: every claim settled");
  EXPECT_LT(stored_seeds().size(), 40u);
  EXPECT_EQ(static_cast<int64_t>(stored_seeds().size()), l.back().seeds);
  // A seed per look, each launch but the first extending the sweep.
  EXPECT_EQ(launcher.requests.size(), l.size());
  EXPECT_FALSE(launcher.requests[0].extend);
  EXPECT_TRUE(launcher.requests[1].extend);
  EXPECT_NE(out.str().find("  " + look_line(l.back()) + "\n  stopped: every claim settled\n"), std::string::npos)
      << out.str();
}

TEST_F(LoopTest, TheBudgetSpentStopsWithTheClaimOpen) {
  launcher.loss = [](const std::string& variant, uint64_t seed) {  // no difference on average
    return 2.0 + (variant == "ega" ? 0.02 : 0.0) * (seed % 2 == 0 ? 1 : -1);
  };
  const UntilRun r = run_of(spec_file({0, 1}), 4, /*alpha=*/0.3);
  ASSERT_EQ(run_until(r, launcher, out), 0) << out.str();
  std::string nexts;
  for (const db::LookRow& l : looks()) nexts += std::to_string(l.seeds) + "|" + l.next + ";";
  EXPECT_EQ(nexts, "2|seed 2 added;3|seed 3 added;4|stopped: --max-seeds 4 reached;");
  EXPECT_EQ(stored_seeds(), (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_FALSE(looks().back().settled);
}

TEST_F(LoopTest, AResumeGoesOnFromTheSeedsTheSweepHas) {
  launcher.loss = [](const std::string& variant, uint64_t seed) {
    return 2.0 + (variant == "ega" ? 0.02 : 0.0) * (seed % 2 == 0 ? 1 : -1);
  };
  const std::string spec = spec_file({0, 1});
  ASSERT_EQ(run_until(run_of(spec, 3, 0.3), launcher, out), 0);  // looks at 2 and 3 seeds
  launcher.requests.clear();
  out.str("");
  ASSERT_EQ(run_until(run_of(spec, 5, 0.3), launcher, out), 0);  // a larger budget, the same command
  EXPECT_NE(out.str().find("sweep seq has 3 seeds already; going on from there"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("look 2 stands (nothing ran since it): not settled: seed 3 added"), std::string::npos)
      << out.str();
  ASSERT_FALSE(launcher.requests.empty());
  EXPECT_TRUE(launcher.requests[0].extend);  // the first launch: the sweep's seeds, from NAME.until.json
  EXPECT_NE(launcher.requests[0].spec_path, spec);
  EXPECT_EQ(stored_seeds(), (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(looks().back().next, "stopped: --max-seeds 5 reached");
}

TEST_F(LoopTest, AResumeWhoseSpecGrewRunsTheNewVariantOnEverySeed) {
  launcher.loss = [](const std::string& variant, uint64_t seed) {
    return 2.0 + (variant == "base" ? 0.0 : 0.02) * (seed % 2 == 0 ? 1 : -1);
  };
  ASSERT_EQ(run_until(run_of(spec_file({0, 1}), 3, 0.3), launcher, out), 0);
  // The user adds a variant to the spec file and runs the command again with a larger budget.
  const UntilRun grown = run_of(spec_file({0, 1}, {"mope"}), 4, 0.3);
  ASSERT_EQ(run_until(grown, launcher, out), 0) << out.str();
  db::ResultsDb db(db_path, db::OpenMode::read_only);
  db::CellFilter mope;
  mope.sweep_id = db.find_sweep("seq")->id;
  int64_t done = 0;
  for (const db::CellRow& c : db.list_cells(mope))
    if (c.variant == "mope" && c.status == db::CellStatus::done) ++done;
  EXPECT_EQ(done, 4);  // seeds 0-2 from the earlier loop, and seed 3
  EXPECT_EQ(stored_seeds(), (std::vector<uint64_t>{0, 1, 2, 3}));
}

TEST_F(LoopTest, AStopSignalBetweenLooksStopsBeforeTheNextLaunchAndIsRecorded) {
  launcher.loss = [](const std::string& variant, uint64_t seed) {
    return 2.0 + (variant == "ega" ? 0.02 : 0.0) * (seed % 2 == 0 ? 1 : -1);
  };
  launcher.after = [&](int n) {
    if (n == 2) launcher.stop = SIGUSR2;  // arrives as launch 2 ends: its look is taken, launch 3 is not run
  };
  EXPECT_EQ(run_until(run_of(spec_file({0, 1}), 6, 0.3), launcher, out), kExitInterrupted);
  EXPECT_EQ(launcher.requests.size(), 2u);
  EXPECT_EQ(looks().back().seeds, 3);
  EXPECT_EQ(looks().back().next, "stopped by SIGUSR2: the next launch (seed 3 not run)");
  EXPECT_NE(out.str().find("SIGUSR2 arrived; stopping before the next launch (seed 3 not run)"), std::string::npos)
      << out.str();
}

TEST_F(LoopTest, AStopSignalBeforeTheFirstLaunchRunsNothing) {
  launcher.stop = SIGTERM;
  EXPECT_EQ(run_until(run_of(spec_file({0, 1}), 6), launcher, out), kExitInterrupted);
  EXPECT_TRUE(launcher.requests.empty());
  EXPECT_NE(out.str().find("SIGTERM arrived; stopping before the first launch"), std::string::npos) << out.str();
}

TEST_F(LoopTest, AStopSignalDuringALaunchEndsTheLoopWithoutALook) {
  launcher.loss = [](const std::string& variant, uint64_t seed) {
    return 2.0 + (variant == "ega" ? 0.02 : 0.0) * (seed % 2 == 0 ? 1 : -1);
  };
  launcher.script = [&](int n) -> std::optional<int> {
    if (n < 2) return std::nullopt;
    // The coordinator checkpoints and marks the sweep interrupted; mpirun answers the relayed SIGTERM with 1.
    launcher.stop = SIGTERM;
    db::ResultsDb db(db_path, db::OpenMode::read_write);
    db.set_sweep_status(db.find_sweep("seq")->id, db::SweepStatus::interrupted);
    return 1;
  };
  EXPECT_EQ(run_until(run_of(spec_file({0, 1}), 6, 0.3), launcher, out), kExitInterrupted);
  EXPECT_EQ(looks().size(), 1u);  // the first launch's only
  EXPECT_NE(out.str().find("stopped by SIGTERM; run the same command again to resume (exit 75)"), std::string::npos)
      << out.str();
  // Killed by the signal as it started (128 + 15): nothing of it ran, the same words as a stop between looks.
  launcher.requests.clear();
  launcher.stop = 0;
  out.str("");
  launcher.script = [&](int) -> std::optional<int> {
    launcher.stop = SIGTERM;
    return 128 + SIGTERM;
  };
  EXPECT_EQ(run_until(run_of(spec_file({0, 1}), 6, 0.3), launcher, out), kExitInterrupted);
  EXPECT_NE(out.str().find("SIGTERM arrived; stopping before the first launch"), std::string::npos) << out.str();
}

TEST_F(LoopTest, ALaunchThatFailsEndsTheLoopWithItsStatusAndNoLook) {
  launcher.script = [](int) -> std::optional<int> { return 1; };  // a cell failed for good, no signal
  EXPECT_EQ(run_until(run_of(spec_file({0, 1}), 6), launcher, out), 1);
  EXPECT_EQ(launcher.requests.size(), 1u);
  EXPECT_EQ(out.str(), "");
  db::ResultsDb db(db_path, db::OpenMode::read_write_create);  // the fake never opened the sweep
  EXPECT_FALSE(db.find_sweep("seq"));
}

}  // namespace
