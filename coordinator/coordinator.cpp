// The coordinator's loop: construction, run(), the main loop with its
// group-commit transaction, the dispatch of each message, and the live view.
#include "coordinator/coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "coordinator/coordinator_internal.h"
#include "db/sqlite.h"
#include "util/error.h"
#include "util/eta.h"
#include "util/log.h"
#include "util/process_info.h"
#include "util/stop_signal.h"

namespace egm::coordinator {

using detail::seconds_between;
using detail::OwnershipLost;

namespace {

// The main loop's write transaction: begun by the first write, committed
// when the loop goes idle, when it has been open kGroupCommit, at once after a
// checkpoint record, and before the loop returns; committed too (not rolled
// back) when an error leaves the loop, so what was written before it stays.
class PassTransaction {
 public:
  explicit PassTransaction(db::Connection& connection) : connection_(connection) {}
  PassTransaction(const PassTransaction&) = delete;
  PassTransaction& operator=(const PassTransaction&) = delete;
  ~PassTransaction() {
    try {
      commit();
    } catch (const std::exception& e) {
      log::error("committing the coordinator's last writes: {}", e.what());
    }
  }
  void begin() {
    if (tx_) return;
    tx_.emplace(connection_);
    begun_ = std::chrono::steady_clock::now();
  }
  void commit() {
    if (!tx_) return;
    tx_->commit();
    tx_.reset();
  }
  // How long the open transaction has been open (zero when none is).
  std::chrono::steady_clock::duration age() const {
    return tx_ ? std::chrono::steady_clock::now() - begun_ : std::chrono::steady_clock::duration::zero();
  }

 private:
  db::Connection& connection_;
  std::optional<db::Transaction> tx_;
  std::chrono::steady_clock::time_point begun_;
};

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, protocol::Transport& transport, std::FILE* out)
    : options_(std::move(options)),
      transport_(transport),
      out_(out),
      view_(out, options_.view, options_.plain_interval_s),
      host_(process_info().host) {
  if (options_.db_path.empty()) options_.db_path = db::default_db_path();
  for (int r = 1; r < transport_.size(); ++r) workers_.push_back(WorkerSlot{r, WorkerState::starting, {}, {}, {}});
}

Coordinator::~Coordinator() = default;

int Coordinator::run() {
  try {
    EGM_REQUIRE(transport_.size() >= 2, ConfigError,
                "no workers: start egm-coordinator with workers, e.g. mpirun -np 1 egm-coordinator SPEC : -np 2 "
                "egm-worker (or use egm sweep)");
    setup();
    return main_loop();
  } catch (const OwnershipLost& e) {
    return lose_ownership(e.what());
  } catch (const std::exception& e) {
    fail_hard(e);
    return kExitError;
  }
}

// ---- the loop ----------------------------------------------------------------------

int Coordinator::main_loop() {
  // Messages handled per pass at most: a full mailbox (1,000 busy workers)
  // then commits once per 1,024 messages (~35 ms of them at saturation; a
  // mailbox holds fewer when the coordinator keeps up). Each commit writes
  // every page the pass dirtied to the WAL, and a page is dirtied by each
  // running cell's rows anew: 64 made the commits a quarter of the
  // coordinator's time; 256 -> 1,024 took its loop from 2,187 to 2,527
  // completions per CPU-s at 20,000 cells (medians; results/BENCHMARKS.md, issue 16).
  constexpr int kBurst = 1024;
  // Writes are committed once they are this old (group commit; the loop
  // passes every 5 ms when idle): one commit per pass was about one per
  // finished cell with 1,000 workers, and its WAL writes a quarter of the
  // coordinator's time. Readers see records up to this much later; a
  // checkpoint record is committed at the end of the burst it came in.
  constexpr auto kGroupCommit = std::chrono::milliseconds(50);
  // One transaction for what the passes write (bursts of messages, the
  // heartbeat, the assignments), begun at the first write: each message's
  // writes stay whole for readers (every ResultsDb method is a savepoint
  // inside it). An error commits what was written before it, as the
  // per-message commits did.
  PassTransaction pass(db().connection());
  while (true) {
    if (!stopping_ && stop_requested()) begin_stop(stop_signal());
    bool got = false;
    for (int i = 0; i < kBurst; ++i) {  // drain a burst, then look after the rest
      std::optional<protocol::Received> r = protocol::try_receive_message(transport_);
      if (!r) break;
      pass.begin();
      handle(*r);
      got = true;
    }
    // A checkpoint record: committed before the loop does anything but read
    // on (its file is on disk already). At the end of the burst rather than
    // before the next message: a run's last checkpoint and its RESULT, which
    // follows at once, then share a commit instead of one commit per cell.
    if (commit_now_) pass.commit();
    commit_now_ = false;
    if (!stopping_ && stop_requested()) begin_stop(stop_signal());
    beat();
    if (!stopping_ && !queue_.empty() && idle_workers() > 0) pass.begin();
    if (!stopping_) assign_idle_workers();
    if (stopping_ || pass.age() >= kGroupCommit) pass.commit();
    if (!stopping_ && queue_.empty() && busy_workers() == 0) {
      pass.commit();
      return finish_normally();
    }
    if (stopping_) {
      if (Clock::now() >= stop_deadline_) stop_overdue_jobs();
      pass.commit();
      if (busy_workers() == 0) return finish_interrupted();
    }
    if (!stopping_ && live_workers() == 0)
      EGM_THROW(Error, "every worker has left; {} cell{} not run", queue_.size(), queue_.size() == 1 ? "" : "s");
    if (!stopping_ && !queue_.empty() && cells_.at(queue_.front()).ranks > live_workers())
      EGM_THROW(Error, "cell {} needs {} workers but only {} are left; {} cell{} not run",
                cells_.at(queue_.front()).row.key, cells_.at(queue_.front()).ranks, live_workers(), queue_.size(),
                queue_.size() == 1 ? "" : "s");
    show_view();
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Coordinator::handle(const protocol::Received& r) {
  // A heartbeat that is due goes first: after a pause (a stopped process) it
  // finds out whether another coordinator took the sweep before any message
  // is written.
  beat();
  EGM_REQUIRE(r.source >= 1 && r.source < transport_.size(), ProtocolError, "message from unexpected rank {}",
              r.source);
  WorkerSlot& w = worker(r.source);
  if (const auto* m = std::get_if<protocol::Hello>(&r.message)) return on_hello(w, *m);
  if (const auto* m = std::get_if<protocol::Records>(&r.message)) return on_records(w, *m);
  if (const auto* m = std::get_if<protocol::Result>(&r.message)) return on_result(w, *m);
  if (const auto* m = std::get_if<protocol::Failed>(&r.message)) return on_failed(w, *m);
  if (const auto* m = std::get_if<protocol::Bye>(&r.message)) return on_bye(w, *m);
  EGM_THROW(ProtocolError, "rank {} sent {}, which only the coordinator sends", r.source,
            protocol::kind_name(protocol::kind_of(r.message)));
}

// ---- view --------------------------------------------------------------------------

void Coordinator::say(const std::string& line) {
  if (view_.mode() == ViewMode::none) {
    log::info("{}", line);
    return;
  }
  view_.message(line);
}

void Coordinator::show_view(bool force) {
  if (!force && !view_.due()) return;
  if (view_.mode() == ViewMode::none) return;
  view_.show(build_view());
}

SweepView Coordinator::build_view() const {
  SweepView v;
  v.sweep = sweep_name_;
  v.total = static_cast<int64_t>(cells_.size());
  v.elapsed_s = seconds_between(started_, Clock::now());
  double steps_to_run = 0, steps_done = 0, queued_steps = 0;
  for (const auto& [id, c] : cells_) {
    if (c.state == CellState::exhausted) {
      ++v.failed;
      continue;
    }
    steps_to_run += static_cast<double>(c.row.max_steps);
    if (c.state == CellState::done) {
      ++v.done;
      steps_done += static_cast<double>(c.row.max_steps);
    } else if (c.state == CellState::queued) {
      ++v.pending;  // waiting in the queue, or stopped and waiting for the next run
      queued_steps += static_cast<double>(c.row.max_steps);
    }
  }
  std::vector<double> remaining, rates;
  for (const auto& [run_id, j] : jobs_) {
    const CellSlot& c = cells_.at(j.cell_id);
    ++v.running;
    const double left = static_cast<double>(c.row.max_steps - j.step.value_or(0));
    steps_done += static_cast<double>(j.step.value_or(0));
    remaining.push_back(left);
    rates.push_back(j.steps_per_s);
    CellLine line;
    line.key = c.row.key;
    line.variant = c.row.variant;
    line.seed = static_cast<uint64_t>(c.row.seed);
    line.worker = j.ranks.front();
    if (j.ranks.size() > 1) line.group = j.ranks;
    line.attempt = j.attempt;
    line.step = j.step;
    line.max_steps = c.row.max_steps;
    line.loss = j.loss;
    line.tokens_per_s = j.tokens_per_s;
    if (j.steps_per_s > 0) line.eta_s = left / j.steps_per_s;
    v.cells.push_back(line);
  }
  v.fraction = steps_to_run > 0 ? steps_done / steps_to_run : 1.0;
  EtaInput eta;  // the one ETA formula (util/eta.h), as egm status computes it from the database
  eta.steps_left = queued_steps;
  for (double r : remaining) eta.steps_left += std::max(0.0, r);
  eta.running_steps_per_s = rates;
  eta.cells_left = v.pending + v.running;
  eta.running = v.running;
  v.eta_s = egm::sweep_eta(eta);
  if (stopping_) v.note = fmt::format("stopping: waiting for {} checkpoint{}", v.running, v.running == 1 ? "" : "s");
  return v;
}

// ---- bookkeeping -------------------------------------------------------------------

int Coordinator::idle_workers() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [](const WorkerSlot& w) { return w.state == WorkerState::idle; }));
}

int Coordinator::busy_workers() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [](const WorkerSlot& w) { return w.state == WorkerState::busy; }));
}

int Coordinator::live_workers() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [](const WorkerSlot& w) { return w.state != WorkerState::gone; }));
}

Coordinator::WorkerSlot& Coordinator::worker(int rank) { return workers_.at(static_cast<size_t>(rank - 1)); }

}  // namespace egm::coordinator
