// The coordinator's logic over the in-process transport, against scripted
// workers (threads): scheduling in spec order to whichever worker is idle,
// exactly one done attempt per cell, retries and giving up, stop signals
// (exit 75, attempts interrupted, budget untouched, resume), and the errors
// that end a sweep before it starts (bad spec, protocol mismatch, a worker
// that cannot train). No MPI, no torch: the workers answer from a script.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <future>
#include <mutex>
#include <optional>
#include <cstdio>
#include <thread>

#include "coordinator/coordinator.h"
#include "db/results_db.h"
#include "spec/sweep_setup.h"
#include "protocol/in_process_transport.h"
#include "util/files.h"
#include "util/sha256.h"
#include "util/stop_signal.h"

namespace fs = std::filesystem;
namespace es = egm::protocol;
namespace ec = egm::coordinator;
namespace edb = egm::db;

namespace {

constexpr const char* kSpec = R"({
  "name": "inproc",
  "preset": "tiny",
  "variants": ["base", "ega", "mope", "ega_mope"],
  "seeds": [0, 1],
  "steps": 40,
  "retries": 1
})";

// A record as a worker forwards it: with the time it was emitted.
egm::Record at(egm::RecordBody body, double time) {
  egm::Record r;
  r.body = std::move(body);
  r.time = time;
  return r;
}

// The final loss a scripted worker reports for a cell: distinct per cell.
double scripted_loss(const es::Assign& a) { return 1.0 + static_cast<double>(a.cell_id) / 100.0; }

void send_done(es::Transport& t, const es::Assign& a, int64_t steps = 40) {
  es::Records r{a.cell_id, a.run_id, {}};
  r.records.push_back(at(egm::ProgressRecord{steps / 2, 2.0, 1e-3, 1000.0, 0.0}, 1000.0));
  r.records.push_back(at(egm::ParamsRecord{steps, {{"mope", -1, 0, "sigma", 0.5}}}, 1001.0));
  es::send_message(t, 0, r);
  es::Result res{a.cell_id, a.run_id, {}, 0};
  res.result.status = egm::Outcome::done;
  res.result.step = steps;
  res.result.measured.final_val = scripted_loss(a);
  res.result.measured.best_val = scripted_loss(a) - 0.01;
  es::send_message(t, 0, res);
}

// The attempt interrupted at `step` (checkpointed there); `signal`: the one the worker caught itself.
void send_interrupted(es::Transport& t, const es::Assign& a, int64_t step, int signal = 0) {
  es::Result res{a.cell_id, a.run_id, {}, signal};
  res.result.status = egm::Outcome::interrupted;
  res.result.step = step;
  es::send_message(t, 0, res);
}

// "Trains" until the coordinator sends STOP.
void wait_for_stop(es::Transport& t) {
  while (true) {
    auto r = es::wait_message(t, std::chrono::milliseconds(20));
    if (r && std::holds_alternative<es::Stop>(r->message)) break;
  }
}

using AssignHandler = std::function<void(es::Transport&, const es::Assign&)>;

struct FakeWorker {
  std::unique_ptr<es::Transport> transport;
  AssignHandler on_assign = [](es::Transport& t, const es::Assign& a) { send_done(t, a); };
  std::function<void(es::Transport&)> say_hello = [](es::Transport& t) {
    es::Hello h;
    h.host = "fakehost";
    h.torch_version = "fake";
    h.git_commit = "fake";
    h.corpus_sha256 = "same";
    es::send_message(t, 0, h);
  };
  std::vector<es::Assign> assigned;
  bool got_shutdown = false;
  bool left = false;  // set by a handler that said BYE itself

  void run() {
    say_hello(*transport);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = es::wait_message(*transport, std::chrono::milliseconds(50));
      if (!r) continue;
      if (auto* a = std::get_if<es::Assign>(&r->message)) {
        assigned.push_back(*a);
        on_assign(*transport, *a);
        if (left) return;
      } else if (std::holds_alternative<es::Shutdown>(r->message)) {
        got_shutdown = true;
        es::send_message(*transport, 0, es::Bye{});
        return;
      }
    }
  }
};

class CoordinatorInProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    egm::clear_stop_request();
    dir_ = fs::temp_directory_path() /
           ("egm_test_coordinator_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_spec(kSpec);
  }
  void TearDown() override {
    egm::clear_stop_request();
    fs::remove_all(dir_);
  }

  void write_spec(const std::string& text) { std::ofstream(spec_path()) << text; }
  std::string spec_path() const { return (dir_ / "spec.json").string(); }
  std::string db_path() const { return (dir_ / "results.sqlite").string(); }

  ec::CoordinatorOptions options() const {
    ec::CoordinatorOptions o;
    o.spec_path = spec_path();
    o.db_path = db_path();
    o.runs_dir = (dir_ / "runs").string();
    o.view = ec::ViewMode::none;
    o.stop_timeout_s = 10;
    o.bye_timeout_s = 10;
    return o;
  }

  // Runs a coordinator (rank 0) and the workers (ranks 1..) to the end; the
  // workers' handlers are set up by `configure`. Returns the exit code.
  int run_sweep(std::vector<FakeWorker>& workers, const ec::CoordinatorOptions& o,
                const std::function<void()>& meanwhile = {}) {
    es::InProcessHub hub(static_cast<int>(workers.size()) + 1);
    for (size_t i = 0; i < workers.size(); ++i) workers[i].transport = hub.endpoint(static_cast<int>(i) + 1);
    auto coordinator_transport = hub.endpoint(0);
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back([&w] { w.run(); });
    std::future<int> code = std::async(std::launch::async, [&] {
      ec::Coordinator c(o, *coordinator_transport);
      return c.run();
    });
    if (meanwhile) meanwhile();
    const int result = code.get();
    for (auto& t : threads) t.join();
    return result;
  }

  fs::path dir_;
};

std::map<std::string, std::vector<edb::RunRow>> runs_by_cell(edb::ResultsDb& db) {
  std::map<std::string, std::vector<edb::RunRow>> out;
  for (auto& r : db.list_runs()) out[r.cell_key].push_back(r);
  return out;
}

}  // namespace

TEST_F(CoordinatorInProcess, EveryCellDoneOnceInSpecOrderByWhicheverWorkerIsIdle) {
  std::vector<FakeWorker> workers(2);
  // Worker 1 is slow, worker 2 answers at once: the idle one gets the next cell.
  workers[0].on_assign = [](es::Transport& t, const es::Assign& a) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    send_done(t, a);
  };
  ASSERT_EQ(run_sweep(workers, options()), ec::kExitDone);

  EXPECT_TRUE(workers[0].got_shutdown);
  EXPECT_TRUE(workers[1].got_shutdown);
  EXPECT_GE(workers[0].assigned.size(), 1u);
  EXPECT_GT(workers[1].assigned.size(), workers[0].assigned.size());
  EXPECT_EQ(workers[0].assigned.size() + workers[1].assigned.size(), 8u);

  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  // Spec order: the run ids (given out in assignment order) rise with the cell position.
  std::vector<edb::CellRow> cells = db.list_cells();
  ASSERT_EQ(cells.size(), 8u);
  const auto runs = runs_by_cell(db);
  int64_t previous_run = 0;
  for (const auto& c : cells) {
    EXPECT_EQ(c.status, edb::CellStatus::done) << c.key;
    ASSERT_EQ(runs.at(c.key).size(), 1u) << c.key;
    const edb::RunRow& r = runs.at(c.key)[0];
    EXPECT_EQ(r.status, edb::RunStatus::done);
    EXPECT_EQ(r.info.host, "fakehost");
    EXPECT_GT(r.id, previous_run);
    previous_run = r.id;
    EXPECT_DOUBLE_EQ(*c.results.final_val, 1.0 + static_cast<double>(c.id) / 100.0);
    EXPECT_EQ(*c.final_step, 40);
  }
  // Each ASSIGN names the cell's run folder and the cell's own config.
  for (const auto& w : workers)
    for (const auto& a : w.assigned) {
      EXPECT_EQ(a.group, std::vector<int>{w.transport->rank()});
      const nlohmann::json& config = a.config;  // as the worker receives it: decoded
      EXPECT_EQ(config["train"]["seed"].get<uint64_t>(), a.seed);
      EXPECT_EQ(config["model"]["variant"].get<std::string>(), a.variant);
      EXPECT_EQ(fs::path(a.runtime.out_dir).parent_path(), dir_ / "runs" / "inproc");
      EXPECT_EQ(fs::path(a.runtime.out_dir).filename().string().rfind(a.cell_key + "-", 0), 0u);
      EXPECT_EQ(a.runtime.fail_at_step, -1);
    }
  // RECORDS became rows (one metric and one param per cell).
  edb::Statement s = db.connection().prepare(
      "SELECT (SELECT count(*) FROM metrics WHERE split = 'train' AND step = 20), "
      "(SELECT count(*) FROM params WHERE module = 'mope' AND name = 'sigma')");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.int64(0), 8);
  EXPECT_EQ(s.int64(1), 8);
  EXPECT_EQ(db.sweep(cells[0].sweep_id).status, edb::SweepStatus::done);

  // Running it again: nothing left to do, nothing runs twice.
  std::vector<FakeWorker> again(2);
  ASSERT_EQ(run_sweep(again, options()), ec::kExitDone);
  EXPECT_TRUE(again[0].assigned.empty());
  EXPECT_TRUE(again[1].assigned.empty());
  edb::ResultsDb db2(db_path(), edb::OpenMode::read_only);
  EXPECT_EQ(db2.list_runs().size(), 8u);
}

TEST_F(CoordinatorInProcess, ACheckpointRecordIsCommittedBeforeTheNextAssignment) {
  // Group commit holds writes up to 50 ms, but a message with a checkpoint
  // record is committed at the end of its burst, before the loop assigns
  // anything: when a worker gets its next cell, a reader already sees the
  // steps up to the previous cell's checkpoint (its RESULT may still wait).
  std::vector<FakeWorker> workers(1);
  std::vector<int64_t> visible;  // train rows of the previous cell seen at each later ASSIGN
  workers[0].on_assign = [&](es::Transport& t, const es::Assign& a) {
    if (workers[0].assigned.size() >= 2) {
      edb::ResultsDb reader(db_path(), edb::OpenMode::read_only);
      edb::Statement s =
          reader.connection().prepare("SELECT count(*) FROM metrics WHERE cell_id = ? AND split = 'train'");
      s.bind(1, workers[0].assigned[workers[0].assigned.size() - 2].cell_id);
      visible.push_back(s.step() ? s.int64(0) : -1);
    }
    es::Records r{a.cell_id, a.run_id, {}};
    for (int64_t step : {10, 20})
      r.records.push_back(at(egm::ProgressRecord{step, 2.0, 1e-3, 1000.0, 0.0}, 1000.0));
    r.records.push_back(at(egm::CheckpointRecord{20}, 1000.0));
    es::send_message(t, 0, r);
    es::Result res{a.cell_id, a.run_id, {}, 0};
    res.result.status = egm::Outcome::done;
    res.result.step = 20;
    res.result.measured.final_val = scripted_loss(a);
    es::send_message(t, 0, res);
  };
  ASSERT_EQ(run_sweep(workers, options()), ec::kExitDone);
  ASSERT_EQ(visible.size(), 7u);  // 8 cells, one worker
  for (int64_t n : visible) EXPECT_EQ(n, 2);
}

TEST_F(CoordinatorInProcess, InjectedFailureIsRecordedRetriedAndGivenUpWhenTheBudgetIsSpent) {
  ec::CoordinatorOptions o = options();
  // ega-s1 fails on its first attempt only; mope-s0 on every attempt (retries 1: two failures allowed).
  o.injected_failures = ec::parse_injected_failures("ega:1:15:1,mope:0:5:99");
  std::vector<FakeWorker> workers(2);
  for (auto& w : workers)
    w.on_assign = [](es::Transport& t, const es::Assign& a) {
      if (a.runtime.fail_at_step >= 0) {
        es::send_message(t, 0, es::Failed{a.cell_id, a.run_id,
                                          "injected failure at step " + std::to_string(a.runtime.fail_at_step),
                                          "trainer.cpp:1 on fakehost (rank 1)", a.runtime.fail_at_step});
      } else {
        send_done(t, a);
      }
    };
  ASSERT_EQ(run_sweep(workers, o), ec::kExitCellsFailed);

  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = runs_by_cell(db);
  ASSERT_EQ(runs.at("ega-s1").size(), 2u);
  EXPECT_EQ(runs.at("ega-s1")[0].status, edb::RunStatus::failed);
  EXPECT_EQ(*runs.at("ega-s1")[0].error, "injected failure at step 15 [at trainer.cpp:1 on fakehost (rank 1)]");
  EXPECT_EQ(runs.at("ega-s1")[1].status, edb::RunStatus::done);
  ASSERT_EQ(runs.at("mope-s0").size(), 2u);
  EXPECT_EQ(runs.at("mope-s0")[1].status, edb::RunStatus::failed);
  for (const auto& c : db.list_cells()) {
    if (c.key == "mope-s0") {
      EXPECT_EQ(c.status, edb::CellStatus::failed);
      EXPECT_EQ(c.failures, 2);
      EXPECT_NE(c.last_error->find("injected failure at step 5"), std::string::npos);
    } else {
      EXPECT_EQ(c.status, edb::CellStatus::done) << c.key;
      EXPECT_EQ(runs.at(c.key).back().status, edb::RunStatus::done);
    }
  }
  // The fail step reached the worker only on the attempts the variable names.
  int injected = 0;
  for (const auto& w : workers)
    for (const auto& a : w.assigned)
      if (a.runtime.fail_at_step >= 0) ++injected;
  EXPECT_EQ(injected, 3);  // ega-s1 once, mope-s0 twice
  EXPECT_EQ(db.sweep(1).status, edb::SweepStatus::failed);
}

// A failure the worker says would recur identically (a config error, out of
// memory before the first step) fails its cell for good at once: no retry now,
// none when the spec runs again. The view and the database get one line, the
// attempt_failed event the full text with its stack trace.
TEST_F(CoordinatorInProcess, ANotRetriableFailureGivesTheCellUpAtOnce) {
  const std::string trace =
      "DefaultCPUAllocator: not enough memory: you tried to allocate 1099511627776 bytes.\n"
      "Exception raised from alloc_cpu at alloc_cpu.cpp:1 (most recent call first):\nframe #0: c10::Error::Error()";
  std::vector<FakeWorker> workers(2);
  for (auto& w : workers)
    w.on_assign = [&trace](es::Transport& t, const es::Assign& a) {
      if (a.cell_key != "mope-s0") return send_done(t, a);
      es::Failed f{a.cell_id, a.run_id, "DefaultCPUAllocator: not enough memory: you tried to allocate 1099511627776 bytes.",
                   "on fakehost (rank 1)", -1, /*retriable=*/false, trace};
      es::send_message(t, 0, f);
    };
  ec::CoordinatorOptions o = options();
  o.view = ec::ViewMode::plain;
  std::FILE* view = std::tmpfile();
  int code = 0;
  {
    es::InProcessHub hub(3);
    for (size_t i = 0; i < workers.size(); ++i) workers[i].transport = hub.endpoint(static_cast<int>(i) + 1);
    auto ct = hub.endpoint(0);
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back([&w] { w.run(); });
    {
      ec::Coordinator c(o, *ct, view);
      code = c.run();
    }
    for (auto& t : threads) t.join();
  }
  ASSERT_EQ(code, ec::kExitCellsFailed);
  std::rewind(view);
  std::string shown;
  for (int ch; (ch = std::fgetc(view)) != EOF;) shown += static_cast<char>(ch);
  std::fclose(view);
  EXPECT_NE(shown.find("failed  mope-s0 attempt 1 failed: DefaultCPUAllocator: not enough memory: you tried to "
                       "allocate 1099511627776 bytes. (not retried: it would fail the same way again; giving up on "
                       "this cell)"),
            std::string::npos)
      << shown;
  EXPECT_EQ(shown.find("Exception raised from"), std::string::npos) << shown;
  EXPECT_NE(shown.find("mope-s0: " + (dir_ / "runs" / "inproc").string() + "/mope-s0-"), std::string::npos) << shown;
  EXPECT_NE(shown.find("/errors.log"), std::string::npos) << shown;

  {
    edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
    const auto runs = runs_by_cell(db);
    ASSERT_EQ(runs.at("mope-s0").size(), 1u);  // retries 1, yet not retried
    EXPECT_EQ(*runs.at("mope-s0")[0].error, "DefaultCPUAllocator: not enough memory: you tried to allocate "
                                            "1099511627776 bytes. [at on fakehost (rank 1)]");
    for (const auto& c : db.list_cells()) {
      if (c.key != "mope-s0") continue;
      EXPECT_EQ(c.status, edb::CellStatus::failed);
      EXPECT_EQ(c.failures, 1);
      EXPECT_EQ(c.max_attempts, 1);
      EXPECT_EQ(c.last_error->find('\n'), std::string::npos) << *c.last_error;
    }
    std::string event;
    for (const auto& e : db.list_events(std::nullopt, 1000))
      if (e.kind == egm::db::EventKind::attempt_failed) event = e.message;
    EXPECT_EQ(event.rfind("mope-s0 attempt 1 failed (not retriable): DefaultCPUAllocator", 0), 0u) << event;
    EXPECT_NE(event.find("\n" + trace), std::string::npos) << event;
  }
  // Running the spec again does not retry it either.
  std::vector<FakeWorker> again(2);
  ASSERT_EQ(run_sweep(again, options()), ec::kExitCellsFailed);
  EXPECT_TRUE(again[0].assigned.empty() && again[1].assigned.empty());
}

// A worker that predates the one-line rule sends LibTorch's whole text as its
// error: the coordinator shows and stores the first line, keeps the rest in the
// event, and retries it (no `retriable` field: retriable).
TEST_F(CoordinatorInProcess, AnOlderWorkersMultiLineErrorIsCutToOneLineAndRetried) {
  std::vector<FakeWorker> workers(2);
  for (auto& w : workers)
    w.on_assign = [](es::Transport& t, const es::Assign& a) {
      if (a.cell_key != "ega-s0" || a.attempt > 1) return send_done(t, a);
      es::send_message(t, 0, es::Failed{a.cell_id, a.run_id, "shape mismatch\nException raised from f at a.cpp:1 "
                                        "(most recent call first):\nframe #0: f()", "", 3});
    };
  ASSERT_EQ(run_sweep(workers, options()), ec::kExitDone);
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = runs_by_cell(db);
  ASSERT_EQ(runs.at("ega-s0").size(), 2u);
  EXPECT_EQ(*runs.at("ega-s0")[0].error, "shape mismatch");
  EXPECT_EQ(runs.at("ega-s0")[1].status, edb::RunStatus::done);
  bool full_text = false;
  for (const auto& e : db.list_events(std::nullopt, 1000))
    full_text |= e.kind == egm::db::EventKind::attempt_failed && e.message.find("frame #0: f()") != std::string::npos;
  EXPECT_TRUE(full_text);
}

// A diverged run is not retried: resumed from its checkpoint with the same data
// order it would diverge at the same step again.
TEST_F(CoordinatorInProcess, ADivergedRunIsNotRetried) {
  std::vector<FakeWorker> workers(2);
  for (auto& w : workers)
    w.on_assign = [](es::Transport& t, const es::Assign& a) {
      if (a.cell_key != "base-s1") return send_done(t, a);
      es::Result res{a.cell_id, a.run_id, {}, 0};
      res.result.status = egm::Outcome::diverged;
      res.result.message = "training loss became nan at step 30";
      res.result.step = 30;
      es::send_message(t, 0, res);
    };
  ASSERT_EQ(run_sweep(workers, options()), ec::kExitCellsFailed);
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = runs_by_cell(db);
  ASSERT_EQ(runs.at("base-s1").size(), 1u);
  EXPECT_EQ(*runs.at("base-s1")[0].error, "diverged: training loss became nan at step 30");
}

// While it runs, the coordinator keeps sweeps.heartbeat_at fresh.
TEST_F(CoordinatorInProcess, TheCoordinatorWritesAHeartbeatWhileItRuns) {
  std::atomic<bool> release{false};
  std::vector<FakeWorker> workers(1);
  workers[0].on_assign = [&release](es::Transport& t, const es::Assign& a) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    send_done(t, a);
  };
  write_spec(R"({"name": "inproc_beat", "preset": "tiny", "variants": ["base"], "seeds": [0], "steps": 40})");
  std::optional<double> first, later;
  const int code = run_sweep(workers, options(), [&] {
    // Wait (bounded) for the first heartbeat, then for a newer one, reading as `egm status` does.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && !(first && later && *later > *first)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!fs::exists(db_path())) continue;
      try {
        edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
        const auto sweeps = db.list_sweeps();
        if (sweeps.empty() || sweeps[0].status != edb::SweepStatus::running || !sweeps[0].heartbeat_at) continue;
        (first ? later : first) = sweeps[0].heartbeat_at;
        EXPECT_FALSE(edb::stale_since(sweeps[0], *sweeps[0].heartbeat_at + 1));
      } catch (const egm::DbError&) {
        // the file is being created
      }
    }
    release = true;
  });
  ASSERT_EQ(code, ec::kExitDone);
  ASSERT_TRUE(first && later);
  EXPECT_GE(*later - *first, edb::kHeartbeatIntervalS * 0.9);
}

TEST_F(CoordinatorInProcess, StopSignalCheckpointsRunningCellsExits75AndTheRerunResumes) {
  std::atomic<int> busy{0};
  std::vector<FakeWorker> workers(2);
  for (auto& w : workers)
    w.on_assign = [&busy](es::Transport& t, const es::Assign& a) {
      es::send_message(t, 0, es::Records{a.cell_id, a.run_id, {at(egm::ProgressRecord{7, 3.0, 0, 0, 0}, 5.0)}});
      ++busy;
      // Train until told to stop, then report the checkpointed step.
      wait_for_stop(t);
      send_interrupted(t, a, 7);
    };
  const int code = run_sweep(workers, options(), [&] {
    while (busy < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    egm::request_stop(SIGUSR2);
  });
  ASSERT_EQ(code, ec::kExitInterrupted);
  EXPECT_TRUE(workers[0].got_shutdown && workers[1].got_shutdown);
  {
    edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
    const auto runs = db.list_runs();
    ASSERT_EQ(runs.size(), 2u);  // the two running cells, nothing started after the signal
    for (const auto& r : runs) {
      EXPECT_EQ(r.status, edb::RunStatus::interrupted);
      EXPECT_EQ(*r.error, "interrupted by SIGUSR2 (time-limit warning) at step 7; checkpointed");
    }
    for (const auto& c : db.list_cells()) EXPECT_EQ(c.failures, 0) << c.key;  // no retry budget used
    bool event = false;
    for (const auto& e : db.list_events(std::nullopt, 1000)) event |= e.kind == egm::db::EventKind::interrupted_sigusr2;
    EXPECT_TRUE(event);
    EXPECT_EQ(db.sweep(1).status, edb::SweepStatus::interrupted);
  }

  egm::clear_stop_request();
  std::vector<FakeWorker> again(2);
  ASSERT_EQ(run_sweep(again, options()), ec::kExitDone);
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = runs_by_cell(db);
  int resumed_cells = 0;
  for (const auto& c : db.list_cells()) {
    EXPECT_EQ(c.status, edb::CellStatus::done);
    int done = 0;
    for (const auto& r : runs.at(c.key)) done += r.status == edb::RunStatus::done;
    EXPECT_EQ(done, 1) << c.key;
    resumed_cells += runs.at(c.key).size() == 2;
  }
  EXPECT_EQ(resumed_cells, 2);
  // The interrupted cells were the first two in spec order, and are started first again.
  std::vector<edb::RunRow> all = db.list_runs();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all[2].attempt, 2);
  EXPECT_EQ(all[3].attempt, 2);
}

TEST_F(CoordinatorInProcess, AWorkerThatWasSignalledStopsTheWholeSweep) {
  std::vector<FakeWorker> workers(2);
  std::atomic<bool> first{true};
  for (auto& w : workers)
    w.on_assign = [&first](es::Transport& t, const es::Assign& a) {
      if (first.exchange(false)) {  // SIGTERM reached this worker before the coordinator
        send_interrupted(t, a, 3, SIGTERM);
        return;
      }
      wait_for_stop(t);
      send_interrupted(t, a, 1);
    };
  ASSERT_EQ(run_sweep(workers, options()), ec::kExitInterrupted);
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  bool event = false;
  for (const auto& e : db.list_events(std::nullopt, 1000)) event |= e.kind == egm::db::EventKind::interrupted_sigterm;
  EXPECT_TRUE(event);
  for (const auto& r : db.list_runs()) EXPECT_EQ(r.status, edb::RunStatus::interrupted);
}

TEST_F(CoordinatorInProcess, BadSpecLeavesTheDatabaseByteIdenticalAndSendsWorkersHome) {
  // A database with a finished sweep in it.
  {
    std::vector<FakeWorker> workers(1);
    ASSERT_EQ(run_sweep(workers, options()), ec::kExitDone);
  }
  const std::string before = egm::sha256_hex(egm::read_file(db_path()));
  for (const std::string bad : {R"({"name": "inproc", "preset": "tiny", "variants": ["base"], "seeds": []})",
                                R"({"name": "inproc", "preset": "tiny", "variants": ["base"], "seeds": [0], "sedes": 1})",
                                R"({"name": "inproc", "preset": "tiny", "variants": ["base"], "seeds": [0],)"}) {
    write_spec(bad);
    std::vector<FakeWorker> workers(2);
    testing::internal::CaptureStderr();
    const int code = run_sweep(workers, options());
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, ec::kExitError) << bad;
    EXPECT_NE(err.find("egm-coordinator: error:"), std::string::npos) << err;
    EXPECT_TRUE(workers[0].got_shutdown && workers[1].got_shutdown);
    EXPECT_TRUE(workers[0].assigned.empty() && workers[1].assigned.empty());
    EXPECT_EQ(egm::sha256_hex(egm::read_file(db_path())), before) << bad;
  }
}

// ASSIGN carries cells.config_json as it is; a row that is no JSON object
// (changed by hand) stops the sweep naming its cell, before an attempt opens.
TEST_F(CoordinatorInProcess, ADamagedCellConfigStopsTheSweepNamingTheCellBeforeItsAttempt) {
  {
    egm::spec::SweepSetup setup = egm::spec::open_sweep(spec_path(), db_path(), edb::ChangedSpec::refuse);
    ASSERT_EQ(setup.db.connection().execute("UPDATE cells SET config_json = '{\"model\": ' WHERE key = 'ega-s0'"), 1);
  }
  std::vector<FakeWorker> workers(1);
  testing::internal::CaptureStderr();
  const int code = run_sweep(workers, options());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, ec::kExitError);
  EXPECT_NE(err.find("cells.config_json of ega-s0 is not a JSON object"), std::string::npos) << err;
  std::vector<std::string> assigned;
  for (const auto& a : workers[0].assigned) assigned.push_back(a.cell_key);
  EXPECT_EQ(assigned, (std::vector<std::string>{"base-s0", "base-s1"}));  // spec order, up to the damaged cell
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = runs_by_cell(db);
  EXPECT_EQ(runs.count("ega-s0"), 0u);  // no attempt was opened for it
  EXPECT_EQ(runs.at("base-s0").size(), 1u);
}

TEST_F(CoordinatorInProcess, ProtocolVersionMismatchIsAClearErrorAndNothingRuns) {
  std::vector<FakeWorker> workers(2);
  workers[1].say_hello = [](es::Transport& t) {
    t.send(0, es::encode_frame(2, static_cast<uint16_t>(es::Kind::hello), R"({"protocol_version":2,"host":"x"})"));
  };
  testing::internal::CaptureStderr();
  const int code = run_sweep(workers, options());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, ec::kExitError);
  EXPECT_NE(err.find("protocol version mismatch: rank 2 speaks egm sweep protocol v2, this process speaks v1"),
            std::string::npos)
      << err;
  EXPECT_TRUE(workers[0].got_shutdown);
}

TEST_F(CoordinatorInProcess, AWorkerThatCannotTrainStopsTheSweepWithItsReason) {
  std::vector<FakeWorker> workers(2);
  workers[0].say_hello = [](es::Transport& t) {
    es::Hello h;
    h.host = "fakehost";
    h.error = "corpus /nope/input.txt not found";
    es::send_message(t, 0, h);
  };
  testing::internal::CaptureStderr();
  const int code = run_sweep(workers, options());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, ec::kExitError);
  EXPECT_NE(err.find("worker rank 1 on fakehost cannot train: corpus /nope/input.txt not found"), std::string::npos)
      << err;
}

TEST_F(CoordinatorInProcess, AWorkerThatIgnoresStopHasItsAttemptClosedAfterTheTimeout) {
  ec::CoordinatorOptions o = options();
  o.stop_timeout_s = 0.3;
  std::atomic<int> busy{0};
  std::vector<FakeWorker> workers(1);
  FakeWorker& w = workers[0];
  w.on_assign = [&busy, &w](es::Transport& t, const es::Assign& a) {
    ++busy;
    while (true) {  // deaf to STOP; leaves only at SHUTDOWN
      auto r = es::wait_message(t, std::chrono::milliseconds(20));
      if (r && std::holds_alternative<es::Shutdown>(r->message)) break;
    }
    es::Result late{a.cell_id, a.run_id, {}, 0};  // too late: the coordinator ignores it
    late.result.status = egm::Outcome::interrupted;
    late.result.step = 5;
    es::send_message(t, 0, late);
    es::send_message(t, 0, es::Bye{});
    w.got_shutdown = w.left = true;
  };
  const int code = run_sweep(workers, o, [&] {
    while (busy < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    egm::request_stop(SIGTERM);
  });
  EXPECT_EQ(code, ec::kExitInterrupted);
  EXPECT_TRUE(w.got_shutdown);
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = db.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, edb::RunStatus::interrupted);
  EXPECT_NE(runs[0].error->find("no answer to STOP within 0.3 s"), std::string::npos) << *runs[0].error;
}

// Issue 29: another coordinator takes the sweep over while this one runs (it
// was stopped, or cut off): at its next heartbeat this one stops its workers,
// writes nothing more and exits 75.
TEST_F(CoordinatorInProcess, ACoordinatorThatLosesItsSweepStopsItsWorkersAndExits75WritingNothing) {
  ::setenv("EGM_STALE_AFTER_S", "0.6", 1);  // a heartbeat every 0.2 s
  std::atomic<int> busy{0};
  std::atomic<bool> got_stop{false};
  std::vector<FakeWorker> workers(1);
  FakeWorker& w = workers[0];
  w.on_assign = [&busy, &got_stop, &w](es::Transport& t, const es::Assign& a) {
    ++busy;
    while (true) {
      auto r = es::wait_message(t, std::chrono::milliseconds(20));
      if (!r) continue;
      if (std::holds_alternative<es::Stop>(r->message)) {
        got_stop = true;
        send_interrupted(t, a, 7);  // checkpointed: dropped by a coordinator that lost the sweep
      } else if (std::holds_alternative<es::Shutdown>(r->message)) {
        break;
      }
    }
    es::send_message(t, 0, es::Bye{});
    w.got_shutdown = w.left = true;
  };
  write_spec(R"({"name": "inproc_lost", "preset": "tiny", "variants": ["base"], "seeds": [0], "steps": 40})");
  const edb::SweepOwner other{"another-host", 999, 1.5, std::nullopt, std::nullopt};
  int64_t events_after_takeover = 0;
  const int code = run_sweep(workers, options(), [&] {
    while (busy < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    edb::ResultsDb db(db_path(), edb::OpenMode::read_write);
    const edb::SweepRow sweep = *db.find_sweep("inproc_lost");
    ASSERT_TRUE(sweep.owner);
    EXPECT_NE(sweep.owner->host, "another-host");
    db.claim_sweep(sweep.id, other);  // as a takeover would
    events_after_takeover = static_cast<int64_t>(db.list_events(sweep.id, 1000).size());
  });
  ::unsetenv("EGM_STALE_AFTER_S");
  EXPECT_EQ(code, ec::kExitInterrupted);
  EXPECT_TRUE(got_stop);
  EXPECT_TRUE(w.got_shutdown);
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const edb::SweepRow sweep = *db.find_sweep("inproc_lost");
  // The new owner's, untouched: no heartbeat, status, attempt end or event from the old one.
  ASSERT_TRUE(sweep.owner);
  EXPECT_EQ(sweep.owner->host, "another-host");
  EXPECT_EQ(sweep.status, edb::SweepStatus::running);
  const auto runs = db.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, edb::RunStatus::running);  // the new owner's recover_interrupted closes it
  EXPECT_EQ(static_cast<int64_t>(db.list_events(sweep.id, 1000).size()), events_after_takeover);
}

// ---- data parallelism: a cell of k ranks goes to k workers at once --------------

constexpr const char* kMixedSpec = R"({
  "name": "inproc_dp",
  "preset": "tiny",
  "variants": ["base", "ega_mope", "ega", "mope"],
  "seeds": [0],
  "data_parallel_by_variant": {"ega_mope": 3, "ega": 2},
  "steps": 40,
  "retries": 0,
  "overrides": {"train": {"batch_size": 12}}
})";

// What each scripted worker did, in the order it happened (one clock for all).
struct Timeline {
  std::mutex mutex;
  // ('s' start | 'e' end, (run id, worker rank)) -> its place in the one order of events.
  std::map<std::pair<char, std::pair<int64_t, int>>, int> order;
  int next = 0;
  void mark(char what, int64_t run, int rank) {
    std::lock_guard<std::mutex> lock(mutex);
    order[{what, {run, rank}}] = next++;
  }
};

// How a group member ends a run: the leader (group[0]) reports records and the
// outcome, the others only their own RESULT, as egm-worker does.
void finish_as_group_member(es::Transport& t, const es::Assign& a) {
  if (a.group.front() == t.rank()) {
    send_done(t, a);
  } else {
    es::Result res{a.cell_id, a.run_id, {}, 0};
    res.result.status = egm::Outcome::done;
    res.result.step = 40;
    es::send_message(t, 0, res);
  }
}

// A group member that takes 60 ms and marks its start and end on the timeline.
AssignHandler group_member(Timeline& timeline) {
  return [&timeline](es::Transport& t, const es::Assign& a) {
    timeline.mark('s', a.run_id, t.rank());
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    timeline.mark('e', a.run_id, t.rank());
    finish_as_group_member(t, a);
  };
}

TEST_F(CoordinatorInProcess, DataParallelCellsGoToKIdleWorkersAtOnceAndNothingOvertakesThem) {
  write_spec(kMixedSpec);
  Timeline timeline;
  std::vector<FakeWorker> workers(3);
  for (auto& w : workers) w.on_assign = group_member(timeline);
  ASSERT_EQ(run_sweep(workers, options()), ec::kExitDone);

  // Each cell's ASSIGN reached exactly its k workers, with one run id and the
  // same group, listed in rank order with the receiver in it.
  std::map<std::string, std::vector<std::pair<int, es::Assign>>> by_cell;
  for (const auto& w : workers)
    for (const auto& a : w.assigned) by_cell[a.cell_key].emplace_back(w.transport->rank(), a);
  const std::map<std::string, size_t> ranks = {{"base-s0", 1}, {"ega_mope-s0", 3}, {"ega-s0", 2}, {"mope-s0", 1}};
  for (const auto& [key, k] : ranks) {
    const auto& got = by_cell[key];
    ASSERT_EQ(got.size(), k) << key;
    std::vector<int> receivers;
    for (const auto& [rank, a] : got) {
      receivers.push_back(rank);
      EXPECT_EQ(a.run_id, got.front().second.run_id) << key;
      EXPECT_EQ(a.group, got.front().second.group) << key;
    }
    std::sort(receivers.begin(), receivers.end());
    EXPECT_EQ(got.front().second.group, receivers) << key << ": the group is its receivers, lowest rank leading";
  }

  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = runs_by_cell(db);
  int64_t previous_run = 0;
  for (const auto& c : db.list_cells()) {
    ASSERT_EQ(runs.at(c.key).size(), 1u) << c.key;
    const edb::RunRow& r = runs.at(c.key)[0];
    EXPECT_EQ(c.status, edb::CellStatus::done) << c.key;
    EXPECT_EQ(r.info.world_size, static_cast<int>(ranks.at(c.key))) << c.key;
    EXPECT_EQ(r.info.backend, ranks.at(c.key) == 1 ? egm::Backend::none : egm::Backend::mpi) << c.key;  // CPU: MPI
    EXPECT_EQ(r.info.device, egm::DeviceName{});
    // Strict head of line: cells start in spec order, so a 1-rank cell never
    // overtakes a waiting k-rank one (run ids are given out as cells start).
    EXPECT_GT(r.id, previous_run) << c.key;
    previous_run = r.id;
    // The leader's records only (send_done: one train metric at step 20).
    EXPECT_DOUBLE_EQ(*c.results.final_val, 1.0 + static_cast<double>(c.id) / 100.0);
  }
  edb::Statement s = db.connection().prepare("SELECT count(*) FROM metrics WHERE split = 'train'");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.int64(0), 4);

  // ega_mope (second in spec order) needs all three workers: base holds one, so
  // it waits (and ega and mope, which would fit the two idle workers, wait
  // behind it). So it ran alone: its three members all started before any of
  // them ended, no other run was in flight when it started, and none started
  // before its first member was done.
  const int64_t wide = runs.at("ega_mope-s0")[0].id;
  int wide_first_start = 1 << 30, wide_last_start = -1, wide_first_end = 1 << 30;
  for (const auto& [event, index] : timeline.order)
    if (event.second.first == wide) {
      if (event.first == 's') wide_first_start = std::min(wide_first_start, index);
      if (event.first == 's') wide_last_start = std::max(wide_last_start, index);
      if (event.first == 'e') wide_first_end = std::min(wide_first_end, index);
    }
  EXPECT_LT(wide_last_start, wide_first_end) << "ega_mope's members did not train together";
  for (const auto& [event, index] : timeline.order) {
    if (event.second.first == wide) continue;
    const int start = timeline.order.at({'s', event.second}), end = timeline.order.at({'e', event.second});
    if (event.first == 's' && start < wide_first_start && end > wide_first_start)
      ADD_FAILURE() << "run " << event.second.first << " was in flight when ega_mope started";
    if (event.first == 's' && start > wide_first_start && start < wide_first_end)
      ADD_FAILURE() << "run " << event.second.first << " started while ega_mope ran on all workers";
  }
  EXPECT_EQ(timeline.order.size(), 2u * (1 + 3 + 2 + 1));  // a start and an end per member
}

TEST_F(CoordinatorInProcess, AMemberThatFailsFailsTheWholeAttemptWithItsError) {
  write_spec(R"({"name": "inproc_dp_fail", "preset": "tiny", "variants": ["base"], "seeds": [0],
                 "data_parallel": 2, "steps": 40, "retries": 0})");
  Timeline timeline;
  std::vector<FakeWorker> workers(2);
  workers[0].on_assign = group_member(timeline);  // the leader finishes
  workers[1].on_assign = [](es::Transport& t, const es::Assign& a) {
    es::send_message(t, 0, es::Failed{a.cell_id, a.run_id, "out of memory", "trainer.cpp:9 on fakehost (rank 2)", 7});
  };
  ASSERT_EQ(run_sweep(workers, options()), ec::kExitCellsFailed);
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  const auto runs = runs_by_cell(db);
  ASSERT_EQ(runs.at("base-s0").size(), 1u);
  EXPECT_EQ(runs.at("base-s0")[0].status, edb::RunStatus::failed);
  EXPECT_EQ(*runs.at("base-s0")[0].error,
            "out of memory [at trainer.cpp:9 on fakehost (rank 2)] (worker rank 2 of the run's 2)");
}

TEST_F(CoordinatorInProcess, ACellNeedingMoreWorkersThanTheSweepHasIsRefusedBeforeAnythingRuns) {
  write_spec(kMixedSpec);  // ega_mope needs 3
  std::vector<FakeWorker> workers(2);
  ::testing::internal::CaptureStderr();
  const int code = run_sweep(workers, options());
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(code, ec::kExitError);
  EXPECT_NE(err.find("the cells of ega_mope (data_parallel 3) need more workers than this sweep has (2); start it "
                     "with at least 3 workers"),
            std::string::npos)
      << err;
  EXPECT_TRUE(workers[0].assigned.empty());
  EXPECT_TRUE(workers[1].assigned.empty());
  EXPECT_TRUE(workers[0].got_shutdown);
  EXPECT_FALSE(fs::exists(db_path())) << "the database was created";
}

// ---- GPU placement under --device cuda ------------------------------------------------

namespace {

constexpr const char* kGpuSpec = R"({
  "name": "inproc_gpu",
  "preset": "tiny",
  "variants": ["base", "ega"],
  "seeds": [0, 1],
  "data_parallel_by_variant": {"ega": 2},
  "runs_per_gpu": 2,
  "steps": 40,
  "retries": 0
})";

// A worker on `host` at launcher local rank `local_rank`, seeing `gpus` GPUs.
std::function<void(es::Transport&)> hello_on(const std::string& host, int local_rank, int gpus) {
  return [=](es::Transport& t) {
    es::Hello h;
    h.host = host;
    h.local_rank = local_rank;
    h.gpus = gpus;
    for (int i = 0; i < gpus; ++i) h.gpu_names.push_back(host + " GPU " + std::to_string(i));
    h.torch_version = "fake";
    h.git_commit = "fake";
    h.corpus_sha256 = "same";
    es::send_message(t, 0, h);
  };
}

}  // namespace

TEST_F(CoordinatorInProcess, CudaSweepsDealGpusRoundRobinPerHostAndEachMemberGetsItsOwn) {
  if (!egm::built_with_cuda()) GTEST_SKIP() << "this egm is built without CUDA: --device cuda is refused";
  write_spec(kGpuSpec);
  // Two hosts with 2 GPUs each; the coordinator's host is neither (local ranks from 0).
  // dist::place_on_gpu: local rank r -> GPU r % 2.
  std::vector<FakeWorker> workers(4);
  workers[0].say_hello = hello_on("nodeA", 0, 2);
  workers[1].say_hello = hello_on("nodeA", 1, 2);
  workers[2].say_hello = hello_on("nodeB", 0, 2);
  workers[3].say_hello = hello_on("nodeB", 1, 2);
  for (auto& w : workers) w.on_assign = finish_as_group_member;
  ec::CoordinatorOptions o = options();
  o.device = egm::parse_device_name("cuda");
  ASSERT_EQ(run_sweep(workers, o), ec::kExitDone);

  const std::map<int, std::string> expected = {{1, "cuda:0"}, {2, "cuda:1"}, {3, "cuda:0"}, {4, "cuda:1"}};
  std::map<int64_t, std::vector<std::string>> devices_by_run;
  for (const auto& w : workers) {
    ASSERT_FALSE(w.assigned.empty());
    for (const auto& a : w.assigned) {
      EXPECT_EQ(a.runtime.device.str(), expected.at(w.transport->rank())) << "rank " << w.transport->rank();
      devices_by_run[a.run_id].push_back(a.runtime.device.str());
    }
  }
  // A 2-rank ega cell takes two idle workers; whichever two they are, on one host
  // they are on distinct GPUs (NCCL needs that), and the run records the leader's.
  edb::ResultsDb db(db_path(), edb::OpenMode::read_only);
  for (const auto& r : db.list_runs()) {
    const auto& devices = devices_by_run.at(r.id);
    EXPECT_EQ(r.info.device.str(), devices.front()) << r.cell_key;
    // The compute statement's inputs: each rank's threads, and the leader's GPU by the name its HELLO gave.
    EXPECT_EQ(r.info.threads, std::optional<int64_t>(o.threads_per_worker)) << r.cell_key;
    // (A group may span both hosts, "nodeA,nodeB": the leader's comes first.)
    const std::string leader_host = r.info.host.substr(0, r.info.host.find(','));
    EXPECT_EQ(r.info.gpu_name, std::optional<std::string>(leader_host + " GPU " + std::to_string(r.info.device.index)))
        << r.cell_key << " on " << r.info.host;
    if (r.variant == "ega") {
      EXPECT_EQ(r.info.world_size, 2) << r.cell_key;
    }
  }
}

TEST_F(CoordinatorInProcess, ACudaSweepWithTooFewGpuSlotsStopsAtHelloNamingTheWorker) {
  if (!egm::built_with_cuda()) GTEST_SKIP() << "this egm is built without CUDA: --device cuda is refused";
  write_spec(kGpuSpec);  // runs_per_gpu 2
  std::vector<FakeWorker> workers(3);
  workers[0].say_hello = hello_on("nodeA", 0, 1);
  workers[1].say_hello = hello_on("nodeA", 1, 1);
  workers[2].say_hello = hello_on("nodeA", 2, 1);  // 1 GPU x 2 runs holds local ranks 0..1
  ec::CoordinatorOptions o = options();
  o.device = egm::parse_device_name("cuda");
  ::testing::internal::CaptureStderr();
  const int code = run_sweep(workers, o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, ec::kExitError);
  EXPECT_NE(err.find("worker rank 3 on nodeA"), std::string::npos) << err;
  EXPECT_NE(err.find("local rank 2 has no GPU"), std::string::npos) << err;
  for (const auto& w : workers) EXPECT_TRUE(w.assigned.empty());
  // Under CUDA every HELLO comes before the database is opened: nothing was written.
  EXPECT_FALSE(std::filesystem::exists(db_path()));
}

TEST_F(CoordinatorInProcess, ACudaIndexPastAWorkersGpusStopsAtHelloBeforeTheDatabase) {
  if (!egm::built_with_cuda()) GTEST_SKIP() << "this egm is built without CUDA: --device cuda is refused";
  write_spec(kGpuSpec);
  std::vector<FakeWorker> workers(2);
  workers[0].say_hello = hello_on("nodeA", 0, 1);
  workers[1].say_hello = hello_on("nodeA", 1, 1);
  ec::CoordinatorOptions o = options();
  o.device = egm::parse_device_name("cuda:7");
  ::testing::internal::CaptureStderr();
  const int code = run_sweep(workers, o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, ec::kExitError);
  EXPECT_NE(err.find("--device cuda:7: worker rank "), std::string::npos) << err;  // whichever said HELLO first
  EXPECT_NE(err.find(" on nodeA sees 1 GPU"), std::string::npos) << err;
  for (const auto& w : workers) EXPECT_TRUE(w.assigned.empty());
  EXPECT_FALSE(std::filesystem::exists(db_path()));
}
