// A cell's life after ASSIGN: its records, its members' answers, and how its
// attempt ends (done, interrupted, retried, given up or abandoned).
#include "coordinator/coordinator.h"

#include <fmt/format.h>

#include "coordinator/coordinator_internal.h"
#include "coordinator/record_mapping.h"
#include "db/sqlite.h"
#include "util/error.h"
#include "util/stop_signal.h"

namespace egm::coordinator {

using detail::seconds_between;

Coordinator::Job* Coordinator::current_job(WorkerSlot& w, int64_t cell_id, int64_t run_id, const char* kind) {
  if (w.run_id && *w.run_id == run_id) {
    auto it = jobs_.find(run_id);
    if (it != jobs_.end() && it->second.cell_id == cell_id) return &it->second;
  }
  // A late message about an attempt already closed (e.g. after a STOP timeout).
  say(fmt::format("warning: rank {} sent {} for run {} (cell {}), which it is not running; ignored", w.rank, kind,
                  run_id, cell_id));
  return nullptr;
}

void Coordinator::on_records(WorkerSlot& w, const protocol::Records& m) {
  Job* job = current_job(w, m.cell_id, m.run_id, "RECORDS");
  if (!job) return;
  if (w.rank != job->ranks.front()) {  // the trainer records on the group's rank 0 only
    say(fmt::format("warning: rank {} sent RECORDS for run {}, which rank {} leads; ignored", w.rank, m.run_id,
                    job->ranks.front()));
    return;
  }
  const CellSlot& cell = cells_.at(m.cell_id);
  const MappedRecords mapped = map_records(m.records, {sweep_id_, m.cell_id, m.run_id, cell.row.max_steps,
                                                      train_stride(cell.row.max_steps, options_.log_interval)});
  {
    // One message, one transaction: readers see all of it or none.
    db::Transaction tx(db().connection());
    db().record_batch(mapped.batch);
    if (mapped.resumed_from_step && !job->resumed_recorded) db().set_resumed_from_step(m.run_id, *mapped.resumed_from_step);
    if (mapped.setup) db().set_run_setup(m.run_id, mapped.setup->device, mapped.setup->backend, mapped.setup->world_size);
    beat();  // a heartbeat that is due rides along in this transaction
    tx.commit();
  }
  if (mapped.resumed_from_step) job->resumed_recorded = true;
  // The checkpoint is on disk already; its record (and the steps before it)
  // are committed at the end of this burst of messages, before anything
  // else, so only a coordinator killed within that burst (at most kBurst
  // messages, tens of milliseconds) leaves a gap between what the database holds and
  // where the run resumes.
  if (mapped.checkpoint_step) commit_now_ = true;
  if (mapped.progress) {
    const ProgressPoint& p = *mapped.progress;
    if (!job->first_progress) {
      job->first_progress = {p.step, p.time};
    } else if (p.time > job->first_progress->second && p.step > job->first_progress->first) {
      job->steps_per_s =
          static_cast<double>(p.step - job->first_progress->first) / (p.time - job->first_progress->second);
    }
    job->step = p.step;
    job->loss = p.loss;
    job->tokens_per_s = p.tokens_per_s;
  }
}

void Coordinator::on_result(WorkerSlot& w, const protocol::Result& m) {
  Job* job = current_job(w, m.cell_id, m.run_id, "RESULT");
  if (!job) return release_if_abandoned(w, m.run_id);
  if (w.rank == job->ranks.front()) job->result = m;
  if (m.signal != 0 && job->signal == 0) job->signal = m.signal;
  member_answered(w, *job);
}

void Coordinator::on_failed(WorkerSlot& w, const protocol::Failed& m) {
  Job* job = current_job(w, m.cell_id, m.run_id, "FAILED");
  if (!job) return release_if_abandoned(w, m.run_id);
  if (!job->failure || w.rank == job->ranks.front()) {
    job->failure = m;
    job->failed_rank = w.rank;
  }
  // Partners still training may wait in a collective for this member; ask
  // them to checkpoint (they hear STOP only if they are not blocked).
  if (job->ranks.size() > 1 && !job->stop_sent)
    for (int r : job->running)
      if (r != w.rank) protocol::send_message(transport_, r, protocol::Stop{"a partner of this run failed", 0});
  job->stop_sent = true;
  member_answered(w, *job);
}

void Coordinator::release_if_abandoned(WorkerSlot& w, int64_t run_id) {
  if (!w.run_id || *w.run_id != run_id) return;
  w.run_id.reset();
  if (w.state == WorkerState::busy) w.state = WorkerState::idle;
}

void Coordinator::member_answered(WorkerSlot& w, Job& job) {
  w.run_id.reset();
  w.state = WorkerState::idle;
  job.running.erase(w.rank);
  if (job.running.empty()) close_job(job);
}

void Coordinator::close_job(Job& job) {
  const int64_t run_id = job.run_id;
  if (job.failure) {
    close_failure(job);
  } else if (job.result) {
    close_result(job, *job.result);
  } else {  // cannot happen: the leader answers RESULT or FAILED
    EGM_THROW(ProtocolError, "run {}: every member answered but the leader (rank {}) sent no RESULT", run_id,
              job.ranks.front());
  }
  jobs_.erase(run_id);
}

void Coordinator::close_result(Job& job, const protocol::Result& m) {
  const RunOutcome& o = m.result;
  CellSlot& cell = cells_.at(m.cell_id);
  const std::string& key = cell.row.key;
  if (o.resumed_from_step && !job.resumed_recorded) db().set_resumed_from_step(m.run_id, *o.resumed_from_step);
  const double took = seconds_between(job.started, Clock::now());

  if (o.status == Outcome::done) {
    // The outcome as the trainer returned it: its measurements become the cell's results.
    db().finish_done(m.run_id, o);
    cell.state = CellState::done;
    cell.row.status = db::CellStatus::done;
    say(fmt::format("done    {} (attempt {}, {}): final val {}", key, job.attempt, format_duration_short(took),
                    o.measured.final_val ? fmt::format("{:.4f}", *o.measured.final_val) : "n/a"));
  } else if (o.status == Outcome::diverged) {
    // Not retried: the retry resumes from the last checkpoint with the same
    // data order and, on CPU, bitwise the same arithmetic, so it would diverge
    // at the same step again (coordinator/README.md, "Failures").
    const std::string error = "diverged: " + o.message;
    db().finish_attempt(m.run_id, db::RunStatus::failed, error, {}, db::FailureInfo{"", /*retriable=*/false}, o.step);
    requeue_or_give_up(m.cell_id, fmt::format("{} attempt {} {}", key, job.attempt, error), /*retriable=*/false);
  } else {  // interrupted: checkpointed; does not use the retry budget
    std::string why;
    if (stopping_) {
      why = "interrupted by " + describe_signal(stop_signal_);
    } else if (job.signal != 0) {
      why = "interrupted by " + describe_signal(job.signal) + " on the worker";
    } else {
      why = "interrupted";
    }
    const std::string text = fmt::format("{} at step {}; checkpointed", why, o.step);
    db().finish_attempt(m.run_id, db::RunStatus::interrupted, text, {}, {}, o.step);
    ++interrupted_attempts_;
    cell.row.status = db::CellStatus::interrupted;
    cell.state = CellState::queued;
    if (!stopping_) queue_.push_front(m.cell_id);  // continue it first
    say(fmt::format("stopped {} (attempt {}): {}", key, job.attempt, text));
    // mpirun and srun forward signals to every rank: a worker that saw one
    // first means the job is being stopped.
    if (job.signal != 0 && !stopping_) request_stop(job.signal);
  }
}

void Coordinator::close_failure(Job& job) {
  const protocol::Failed& m = *job.failure;
  // One line for the view, the runs row and cells.last_error (a worker that
  // predates the rule may send LibTorch's whole stack trace in `error`); the
  // full text goes to the attempt_failed event.
  const std::string headline = protocol::failure_headline(m.error);
  std::string error = m.where.empty() ? headline : fmt::format("{} [at {}]", headline, m.where);
  if (job.ranks.size() > 1) error += fmt::format(" (worker rank {} of the run's {})", job.failed_rank, job.ranks.size());
  db::FailureInfo failure;
  failure.detail = m.detail.empty() ? m.error : m.detail;
  failure.retriable = m.retriable;
  db().finish_attempt(m.run_id, db::RunStatus::failed, error, {}, failure,
                      m.step >= 0 ? std::optional<int64_t>(m.step) : std::nullopt);
  requeue_or_give_up(m.cell_id,
                     fmt::format("{} attempt {} failed{}: {}", cells_.at(m.cell_id).row.key, job.attempt,
                                 m.step >= 0 ? fmt::format(" at step {}", m.step) : "", headline),
                     m.retriable);
}

void Coordinator::abandon_job(int64_t run_id, const std::string& text, bool requeue) {
  auto it = jobs_.find(run_id);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  db().finish_attempt(run_id, db::RunStatus::interrupted, text);
  CellSlot& cell = cells_.at(job.cell_id);
  cell.row.status = db::CellStatus::interrupted;
  cell.state = CellState::queued;
  if (requeue) queue_.push_front(job.cell_id);
  // Members still on it stay busy until they answer (release_if_abandoned):
  // handing them a cell now would cross the run they are finishing.
  if (!job.stop_sent)
    for (int r : job.running)
      if (worker(r).state == WorkerState::busy) protocol::send_message(transport_, r, protocol::Stop{text, 0});
  jobs_.erase(it);
}

void Coordinator::on_bye(WorkerSlot& w, const protocol::Bye& m) {
  if (!m.error.empty()) log::error("worker rank {} left: {}", w.rank, m.error);
  w.state = WorkerState::gone;
  if (w.run_id) {
    const std::string text = fmt::format("worker rank {} left{}{}", w.rank, m.error.empty() ? "" : ": ", m.error);
    // Its partners in a k-rank run are released too; should one be stuck in a
    // collective with the leaver, the sweep waits for it (a stop signal and
    // --stop-timeout end that wait).
    abandon_job(*w.run_id, text, /*requeue=*/true);
    w.run_id.reset();
  }
}

void Coordinator::requeue_or_give_up(int64_t cell_id, const std::string& what, bool retriable) {
  CellSlot& cell = cells_.at(cell_id);
  cell.row = db().cell(cell_id);  // failures as the database counts them (max_attempts lowered when not retriable)
  if (!retriable) {
    cell.state = CellState::exhausted;
    say(fmt::format("failed  {} (not retried: it would fail the same way again; giving up on this cell)", what));
  } else if (cell.row.failures < cell.row.max_attempts) {
    cell.state = CellState::queued;
    queue_.push_back(cell_id);  // retried after the cells waiting now
    say(fmt::format("failed  {} (failure {} of {} allowed; will retry)", what, cell.row.failures,
                    cell.row.max_attempts));
  } else {
    cell.state = CellState::exhausted;
    say(fmt::format("failed  {} (failure {} of {} allowed; giving up on this cell)", what, cell.row.failures,
                    cell.row.max_attempts));
  }
}

}  // namespace egm::coordinator
