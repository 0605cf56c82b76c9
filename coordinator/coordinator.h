// The sweep coordinator (rank 0): opens the sweep in the results database,
// hands cells to idle workers in spec order (dynamic load balancing; a cell
// of data_parallel k goes to k idle workers at once, see assign_idle_workers), writes
// everything the workers report, retries failed cells while their budget
// lasts, and turns a stop signal into checkpoints and exit 75. The protocol it
// speaks is written down in src/protocol/protocol.h; the life cycle of cells and
// attempts in src/db/README.md. It is the only writer of the database.
//
// The transport is an interface so the same logic runs over MPI (the
// egm-coordinator binary) and over threads (tests).
#pragma once

#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/failure_injection.h"
#include "coordinator/live_view.h"
#include "db/results_db.h"
#include "launch/launch_options.h"
#include "spec/sweep_setup.h"
#include "protocol/transport.h"

namespace egm::coordinator {

// Exit codes of egm-coordinator (and so of `egm sweep`).
inline constexpr int kExitDone = 0;          // every cell done
inline constexpr int kExitCellsFailed = 1;   // the sweep ran to its end, some cell failed for good
inline constexpr int kExitError = 2;         // bad spec, database or protocol error: nothing (more) ran
inline constexpr int kExitInterrupted = 75;  // EX_TEMPFAIL: stopped by a signal, checkpointed; run again to resume

// The launch flags (launch/launch_options.h: spec, db, runs dir, device, ...)
// plus what only the coordinator itself takes.
struct CoordinatorOptions : launch::LaunchOptions {
  int64_t log_interval = 10;        // steps between progress records
  double bye_timeout_s = 30;        // after SHUTDOWN: how long to wait for the workers to leave
  double hello_timeout_s = 300;     // --device cuda: how long to wait for every worker's HELLO
  ViewMode view = ViewMode::automatic;
  double plain_interval_s = 10;     // status line period when the view is plain
  std::vector<InjectedFailure> injected_failures;  // test-only (EGM_TEST_FAIL)
};

class Coordinator {
 public:
  Coordinator(CoordinatorOptions options, protocol::Transport& transport, std::FILE* out = stdout);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Runs the sweep to its end (or to a stop signal); returns the exit code.
  // Errors are reported on stderr and become kExitError.
  int run();
  // False when a worker did not answer SHUTDOWN in time; the caller then ends
  // the job with MPI_Abort instead of waiting in MPI_Finalize.
  bool workers_left_in_order() const { return workers_left_in_order_; }
  // Database transactions this coordinator committed (benchmarks; 0 before setup).
  int64_t database_commits() const { return setup_ ? setup_->db.connection().commits() : 0; }

 private:
  using Clock = std::chrono::steady_clock;

  // One attempt in flight, trained by the workers in `ranks` (ranks[0] leads:
  // only its RECORDS count). It ends when every member has answered.
  struct Job {
    int64_t cell_id = 0;
    int64_t run_id = 0;
    int attempt = 0;
    std::vector<int> ranks;
    std::set<int> running;                   // members that have not answered yet
    std::optional<protocol::Result> result;     // the leader's RESULT
    std::optional<protocol::Failed> failure;    // a member's FAILED (the leader's, if it sent one)
    int failed_rank = 0;
    int signal = 0;                          // a signal any member received itself
    Clock::time_point started;
    bool stop_sent = false;
    bool resumed_recorded = false;
    std::optional<int64_t> step;
    std::optional<double> loss, tokens_per_s;
    std::optional<std::pair<int64_t, double>> first_progress;  // (step, time) of the attempt's first record
    double steps_per_s = 0;
  };
  enum class WorkerState { starting, idle, busy, gone };
  struct WorkerSlot {
    int rank = 0;
    WorkerState state = WorkerState::starting;
    protocol::Hello hello;
    DeviceName device;              // what it trains on (device_for), set at HELLO
    std::optional<int64_t> run_id;  // the attempt it is training (busy)
  };
  enum class CellState { queued, running, done, exhausted };
  struct CellSlot {
    db::CellRow row;
    CellState state = CellState::done;
    int ranks = 1;  // workers that train it together (the spec's data_parallel for its variant)
  };

  void setup();
  int main_loop();
  int finish_normally();
  int finish_interrupted();
  void fail_hard(const std::exception& error);

  void handle(const protocol::Received& received);
  void on_hello(WorkerSlot& w, const protocol::Hello& m);
  void on_records(WorkerSlot& w, const protocol::Records& m);
  void on_result(WorkerSlot& w, const protocol::Result& m);
  void on_failed(WorkerSlot& w, const protocol::Failed& m);
  void on_bye(WorkerSlot& w, const protocol::Bye& m);
  Job* current_job(WorkerSlot& w, int64_t cell_id, int64_t run_id, const char* kind);
  // A member's RESULT or FAILED frees it; the last one closes the job.
  void member_answered(WorkerSlot& w, Job& job);
  // The answer of a member of an attempt already abandoned: it is free again.
  void release_if_abandoned(WorkerSlot& w, int64_t run_id);
  void close_job(Job& job);
  void close_result(Job& job, const protocol::Result& m);
  void close_failure(Job& job);
  // Ends an attempt whose members cannot all answer (a member left, STOP timed
  // out): interrupted, the cell queued again (first, when `requeue`).
  void abandon_job(int64_t run_id, const std::string& text, bool requeue);

  void assign_idle_workers();
  void assign(const std::vector<WorkerSlot*>& group, int64_t cell_id);
  // Throws ConfigError when a cell needs more workers than the sweep has.
  void check_group_sizes(const spec::ExperimentSpec& spec) const;
  DeviceName device_for(const WorkerSlot& w, const protocol::Hello& hello) const;
  // --device cuda: every worker's HELLO (and so its GPU placement) before the database is opened.
  void await_hellos();
  // `retriable` false: the failure would recur identically; the cell is given up at once.
  void requeue_or_give_up(int64_t cell_id, const std::string& what, bool retriable = true);
  // The heartbeat (sweeps.heartbeat_at) when db::kHeartbeatIntervalS have passed since the last.
  // Refreshes the heartbeat only while this coordinator owns the sweep; throws
  // (OwnershipLost) once another has taken it over.
  void beat();
  // Clears this coordinator's ownership (an orderly end: done, failed, interrupted, error).
  void release_ownership();
  // Another coordinator owns the sweep now: stop the workers, write nothing, exit 75.
  int lose_ownership(const std::string& why);
  void begin_stop(int signal_number);
  void stop_overdue_jobs();
  // SHUTDOWN to every worker still here, then waits for their BYEs
  // (`record`: keep writing what arrives meanwhile).
  void shutdown_workers(const std::string& reason, bool record);

  void show_view(bool force = false);
  SweepView build_view() const;
  void say(const std::string& line);

  int idle_workers() const;
  int busy_workers() const;
  int live_workers() const;
  WorkerSlot& worker(int rank);
  db::ResultsDb& db() { return setup_->db; }

  CoordinatorOptions options_;
  protocol::Transport& transport_;
  std::FILE* out_;
  LiveView view_;
  Clock::time_point started_ = Clock::now();

  std::unique_ptr<spec::SweepSetup> setup_;
  int64_t sweep_id_ = 0;
  std::string sweep_name_;
  std::string host_;
  std::vector<WorkerSlot> workers_;  // index = rank - 1
  int runs_per_gpu_ = 1;             // the spec's runs_per_gpu (device_for)
  DeviceName device_;                // the sweep's device: --device, else the spec's, else cpu
  std::map<int64_t, CellSlot> cells_;
  std::deque<int64_t> queue_;        // cell ids, in the order they will be handed out
  std::map<int64_t, Job> jobs_;      // attempts in flight, by run id
  std::string corpus_sha256_;
  std::string corpus_path_;          // the first worker's (they all read the same bytes)
  double heartbeat_interval_s_ = db::kHeartbeatIntervalS;
  bool lost_ = false;                // another coordinator took the sweep over

  bool stopping_ = false;
  int stop_signal_ = 0;
  Clock::time_point stop_deadline_;
  int interrupted_attempts_ = 0;
  Clock::time_point last_heartbeat_;
  bool workers_left_in_order_ = true;
  bool commit_now_ = false;  // main_loop commits its pass after the message that set it
};

// "SIGUSR2 (time-limit warning)", "SIGTERM (preemption or cancel)", ...
std::string describe_signal(int signal_number);
// The events.kind of an interruption: interrupted_sigusr2, ... (interrupted_signal
// for a signal without a name of its own).
db::EventKind interruption_kind(int signal_number);

}  // namespace egm::coordinator
