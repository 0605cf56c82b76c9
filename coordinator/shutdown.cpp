// Signals and shutdown: a stop signal turned into STOPs and checkpoints,
// SHUTDOWN and the workers' BYEs, and the sweep's ends (finished, interrupted, error).
#include "coordinator/coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>

#include "coordinator/coordinator_internal.h"
#include "coordinator/summary.h"
#include "protocol/run_dirs.h"
#include "util/error.h"
#include "util/log.h"
#include "util/stop_signal.h"

namespace egm::coordinator {

using detail::seconds_between;

std::string describe_signal(int sig) { return describe_stop_signal(sig); }

// Each stop signal has its own event kind, so the events table tells a time limit (USR2) from a cancel (TERM).
db::EventKind interruption_kind(int sig) {
  switch (sig) {
    case SIGUSR2: return db::EventKind::interrupted_sigusr2;
    case SIGTERM: return db::EventKind::interrupted_sigterm;
    case SIGINT: return db::EventKind::interrupted_sigint;
    case SIGUSR1: return db::EventKind::interrupted_sigusr1;
    case SIGHUP: return db::EventKind::interrupted_sighup;
    default: return db::EventKind::interrupted_signal;
  }
}

// ---- stopping and shutting down ----------------------------------------------------

void Coordinator::begin_stop(int sig) {
  stopping_ = true;
  stop_signal_ = sig;
  // After --stop-timeout the loop stops waiting for checkpoints (stop_overdue_jobs).
  stop_deadline_ = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.stop_timeout_s * 1000));
  // Jobs, not workers: a data-parallel job of several ranks is one cell to checkpoint.
  const int busy = static_cast<int>(jobs_.size());
  const std::string text = fmt::format("interrupted by {}: checkpointing {} running cell{}", describe_signal(sig), busy,
                                       busy == 1 ? "" : "s");
  db().record_event({sweep_id_, std::nullopt, std::nullopt, interruption_kind(sig), text, 0, std::nullopt});
  say(text);
  for (auto& [run_id, job] : jobs_) {
    for (int r : job.running)  // every member: they agree on the step to stop at
      protocol::send_message(transport_, r, protocol::Stop{"interrupted by " + describe_signal(sig), sig});
    // Marked so a partner's failure or an abandoned job (cell_life.cpp) sends these ranks no second STOP.
    job.stop_sent = true;
  }
}

void Coordinator::stop_overdue_jobs() {
  const std::string text = fmt::format(
      "interrupted by {}; no answer to STOP within {:g} s (the next attempt resumes from the last checkpoint)",
      describe_signal(stop_signal_), options_.stop_timeout_s);
  std::vector<int64_t> overdue;  // the ids first: abandon_job erases from jobs_
  for (const auto& [run_id, job] : jobs_) overdue.push_back(run_id);
  for (int64_t run_id : overdue) {
    say(fmt::format("stopped {}: {}", cells_.at(jobs_.at(run_id).cell_id).row.key, text));
    abandon_job(run_id, text, /*requeue=*/false);  // not queued: the sweep is ending; the next start resumes it
    ++interrupted_attempts_;
  }
  for (WorkerSlot& w : workers_) {
    if (w.state != WorkerState::busy) continue;
    w.run_id.reset();
    w.state = WorkerState::idle;  // SHUTDOWN follows; without a BYE the job ends with MPI_Abort
  }
}

void Coordinator::shutdown_workers(const std::string& reason, bool record) {
  for (WorkerSlot& w : workers_)
    if (w.state != WorkerState::gone) protocol::send_message(transport_, w.rank, protocol::Shutdown{reason});
  // A worker that never answers must not hold the sweep open: after bye_timeout_s the coordinator ends without it.
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.bye_timeout_s * 1000));
  while (live_workers() > 0 && Clock::now() < deadline) {
    if (record) beat();  // the sweep still says 'running' while the workers leave
    std::optional<protocol::Received> r;
    try {
      r = protocol::wait_message(transport_, std::chrono::milliseconds(100));
    } catch (const std::exception& e) {
      // Recording, a broken transport is the sweep's error; otherwise (an error or a
      // takeover is ending it already) only sending everyone home is left to do.
      if (record) throw;
      log::warn("while shutting down: {}", e.what());
      continue;
    }
    if (!r) continue;
    if (record) {
      handle(*r);  // a last RESULT or RECORDS is still written
    } else if (r->source >= 1 && r->source < transport_.size() && std::holds_alternative<protocol::Bye>(r->message)) {
      worker(r->source).state = WorkerState::gone;
    }
  }
  if (live_workers() > 0) {
    log::error("{} worker{} did not answer SHUTDOWN within {:.0f} s", live_workers(), live_workers() == 1 ? "" : "s",
               options_.bye_timeout_s);
    workers_left_in_order_ = false;
  }
}

int Coordinator::finish_normally() {
  shutdown_workers("the sweep is finished", /*record=*/true);
  db::CellFilter filter;
  filter.sweep_id = sweep_id_;
  filter.latest_step = false;
  const std::vector<db::CellRow> cells = db().list_cells(filter);
  const std::vector<std::string> failed = failed_cell_lines(cells);
  const int64_t done = std::count_if(cells.begin(), cells.end(),
                                     [](const db::CellRow& c) { return c.status == db::CellStatus::done; });
  // Written after every worker has left, so no late RESULT can change a cell of a sweep marked finished.
  db().set_sweep_status(sweep_id_, failed.empty() ? db::SweepStatus::done : db::SweepStatus::failed);
  release_ownership();
  db().record_event({sweep_id_, std::nullopt, std::nullopt,
                     failed.empty() ? db::EventKind::sweep_done : db::EventKind::sweep_failed,
                     fmt::format("{} of {} cells done, {} failed for good", done, cells.size(), failed.size()), 0,
                     std::nullopt});
  show_view(/*force=*/true);
  view_.close();
  print_sweep_summary(db(), cells, setup_->spec, out_);
  const std::string elapsed = format_duration_short(seconds_between(started_, Clock::now()));
  if (!failed.empty()) {
    // Where the full text of each failure is (the lines above are one line each).
    std::fprintf(out_, "full error texts (stack traces included):\n");
    for (const db::CellRow& c : cells) {
      if (c.status != db::CellStatus::failed || c.failures < c.max_attempts) continue;
      const std::string dir = protocol::run_dir(options_.runs_dir, sweep_name_, c.key, c.config_hash);
      std::fprintf(out_, "  %s: %s/errors.log\n", c.key.c_str(), dir.c_str());
    }
    std::fprintf(out_, "  and in the database: egm query \"SELECT message FROM events WHERE kind = 'attempt_failed'\" "
                       "--db %s\n",
                 db().path().c_str());
    std::fflush(out_);
    std::fprintf(stderr, "egm-coordinator: sweep %s finished in %s with %zu cell%s failed for good (see above)\n",
                 sweep_name_.c_str(), elapsed.c_str(), failed.size(), failed.size() == 1 ? "" : "s");
    return kExitCellsFailed;
  }
  std::fprintf(out_, "sweep %s: all %lld cells done (%s)\n", sweep_name_.c_str(), static_cast<long long>(done),
               elapsed.c_str());
  std::fflush(out_);
  return kExitDone;
}

int Coordinator::finish_interrupted() {
  shutdown_workers("interrupted by " + describe_signal(stop_signal_), /*record=*/true);
  // Interrupted, not failed: the next start (or a requeued job) resumes it from the checkpoints.
  db().set_sweep_status(sweep_id_, db::SweepStatus::interrupted);
  release_ownership();  // a requeued job may start on another host: it need not wait for staleness
  show_view(/*force=*/true);
  view_.close();
  std::fprintf(out_,
               "sweep %s interrupted by %s: %d running attempt%s checkpointed; run the same command again to resume "
               "(exit %d)\n",
               sweep_name_.c_str(), describe_signal(stop_signal_).c_str(), interrupted_attempts_,
               interrupted_attempts_ == 1 ? "" : "s", kExitInterrupted);
  std::fflush(out_);
  return kExitInterrupted;
}

void Coordinator::fail_hard(const std::exception& error) {
  view_.close();
  std::fprintf(stderr, "egm-coordinator: error: %s\n", error.what());
  if (const auto* e = dynamic_cast<const Error*>(&error); e && !e->where().empty())
    log::debug("raised at {}", e->where());
  // Let running cells checkpoint, then send everyone home without writing
  // more: the database may be the problem. The next start recovers the
  // attempts left 'running'.
  try {
    for (WorkerSlot& w : workers_)
      if (w.state == WorkerState::busy) protocol::send_message(transport_, w.rank, protocol::Stop{"coordinator error", 0});
    shutdown_workers(std::string("coordinator error: ") + error.what(), /*record=*/false);
  } catch (const std::exception& e) {
    log::error("while stopping the workers: {}", e.what());
    workers_left_in_order_ = false;
  }
  if (setup_) {
    try {
      db().set_sweep_status(sweep_id_, db::SweepStatus::interrupted);
      release_ownership();
    } catch (const std::exception&) {
      // The database itself may be what failed; recovery happens at the next start.
    }
  }
}

}  // namespace egm::coordinator
