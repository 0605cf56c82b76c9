#include "coordinator/coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "coordinator/record_mapping.h"
#include "coordinator/summary.h"
#include "config/run_config.h"
#include "db/reuse.h"
#include "db/sqlite.h"
#include "egm/version_info.h"
#include "launch/gpu_placement.h"
#include "slurm/slurm_env.h"
#include "sweep/run_dirs.h"
#include "util/error.h"
#include "util/eta.h"
#include "util/json_limits.h"
#include "util/log.h"
#include "util/process_info.h"
#include "util/source_state.h"
#include "util/stop_signal.h"

namespace egm::coordinator {
namespace {

using sweep::Received;

// This coordinator no longer owns its sweep (another took it over while this
// one was stopped or cut off): it stops its workers, writes nothing, exits 75.
class OwnershipLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The backend the members will use (run/device.h's one rule, which the
// workers' make_communicator applies too); the worker's start record then
// replaces the prediction with what it really used.
Backend expected_backend(const DeviceName& device, const std::vector<const sweep::Hello*>& members) {
  const bool nccl = std::all_of(members.begin(), members.end(), [](const sweep::Hello* h) { return h->nccl; });
  return backend_for(device, static_cast<int>(members.size()), nccl);
}

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

// "base-s0, mope-s0, ... (12 more)": the cells a start linked, for its one line.
std::string reused_keys(const std::vector<db::ReuseLink>& links) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < links.size() && i < 8; ++i) keys.push_back(links[i].key);
  std::string s = fmt::format("{}", fmt::join(keys, ", "));
  if (links.size() > keys.size()) s += fmt::format(" ({} more)", links.size() - keys.size());
  return s;
}

}  // namespace

std::string describe_signal(int sig) { return describe_stop_signal(sig); }

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

Coordinator::Coordinator(CoordinatorOptions options, sweep::Transport& transport, std::FILE* out)
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

// ---- setup -----------------------------------------------------------------------

void Coordinator::setup() {
  // A bad spec throws here, before the database is opened (spec/sweep_setup.h),
  // and so does a cell that needs more workers than this sweep has.
  spec::ExperimentSpec spec = spec::load_spec(options_.spec_path, options_.grid);
  check_group_sizes(spec);
  runs_per_gpu_ = spec.runs_per_gpu;
  device_ = launch::resolve_device(options_.device, spec.device);
  require_buildable(device_);
  // Every worker's HELLO before the database is opened: a worker without its
  // GPU stops the sweep here, with nothing written, and the corpus the workers
  // read is checked against the sweep's in the transaction that opens it.
  await_hellos();
  spec::SweepOpening opening;
  opening.claimant = db::Claimant{host_, static_cast<int64_t>(::getpid()), std::nullopt, options_.takeover};
  if (const auto slurm = slurm::read_slurm_env(); slurm.job_id) opening.claimant->slurm_job = std::to_string(*slurm.job_id);
  if (!corpus_sha256_.empty()) {
    db::SweepCorpus corpus{corpus_sha256_, std::nullopt, corpus_path_};
    std::error_code ec;
    if (const auto size = std::filesystem::file_size(corpus_path_, ec); !ec) corpus.bytes = static_cast<int64_t>(size);
    opening.corpus = corpus;
  }
  if (!options_.no_reuse)
    opening.reuse = spec::SweepOpening::Reuse{device_kind(device_), kNumericsVersion,
                                              db::check_reuse_sources(options_.reuse_from, options_.db_path)};
  setup_ = std::make_unique<spec::SweepSetup>(spec::open_sweep(
      std::move(spec), options_.db_path, spec::changed_spec(options_.new_sweep, options_.extend), opening));
  const db::SweepRow& sweep = setup_->sweep.sweep;
  sweep_id_ = sweep.id;
  sweep_name_ = sweep.name;
  heartbeat_interval_s_ = db::owner_heartbeat_interval_s();
  if (setup_->took_over) {
    db().record_event({sweep_id_, std::nullopt, std::nullopt, db::EventKind::sweep_taken_over,
                       *setup_->took_over, 0, std::nullopt});
    say(fmt::format("sweep {}: {}", sweep_name_, *setup_->took_over));
  }
  if (setup_->corpus_note) say("warning: " + *setup_->corpus_note);
  for (const std::string& note : setup_->reuse_notes) say(note);
  if (!setup_->reused.empty())
    say(fmt::format("sweep {}: {} cell{} reused finished runs of the same identity instead of training (--no-reuse "
                    "trains them): {}",
                    sweep_name_, setup_->reused.size(), setup_->reused.size() == 1 ? "" : "s",
                    reused_keys(setup_->reused)));
  if (setup_->sweep.superseded_as)
    say(fmt::format("the previous sweep '{}' is kept as '{}' (--new-sweep)", sweep_name_, *setup_->sweep.superseded_as));

  const sweep::SweepDir dir =
      sweep::prepare_sweep_dir(options_.runs_dir, {sweep.id, sweep.name, sweep.spec_hash, sweep.created_at});
  if (dir.moved_aside) {
    const std::string text = fmt::format("{} belonged to another sweep named '{}'; moved aside to {}", dir.path,
                                         sweep_name_, *dir.moved_aside);
    db().record_event({sweep_id_, std::nullopt, std::nullopt, db::EventKind::runs_dir_moved, text, 0, std::nullopt});
    say(text);
  }
  const int recovered = db().recover_interrupted(sweep_id_, "the coordinator stopped before the attempt ended");
  if (recovered > 0)
    say(fmt::format("{} cell{} left running by an earlier coordinator will resume from their checkpoints", recovered,
                    recovered == 1 ? "" : "s"));

  db::CellFilter filter;
  filter.sweep_id = sweep_id_;
  for (db::CellRow& row : db().list_cells(filter)) {
    const int64_t id = row.id;
    const int ranks = setup_->spec.ranks_for(row.variant);
    cells_[id] = CellSlot{std::move(row), CellState::done, ranks};
  }
  for (const db::CellRow& row : db().cells_to_run(sweep_id_)) {
    cells_.at(row.id).state = CellState::queued;
    queue_.push_back(row.id);
  }
  int64_t done = 0, exhausted = 0;
  for (auto& [id, c] : cells_) {
    if (c.state == CellState::queued) continue;
    if (c.row.status == db::CellStatus::done) {
      ++done;
    } else {
      c.state = CellState::exhausted;  // failed with no retries left
      ++exhausted;
    }
  }
  if (const auto slurm = slurm::read_slurm_env(); slurm.job_id)
    db().set_slurm_job_id(sweep_id_, std::to_string(*slurm.job_id));
  // The code behind this sweep's numbers: a modified build's diff, kept once
  // (runs record its sha256; workers of the same build carry the same).
  if (const SourceState& src = source_state(); src.modified())
    db().store_source_diff({std::string(src.diff_sha256), static_cast<int64_t>(src.diff_size), std::string(src.diff)});
  db().set_sweep_status(sweep_id_, db::SweepStatus::running);  // with the first heartbeat
  last_heartbeat_ = Clock::now();
  db().record_event({sweep_id_, std::nullopt, std::nullopt, db::EventKind::coordinator_started,
                     fmt::format("coordinator on {} with {} workers; runs in {}; egm {}", host_, workers_.size(),
                                 dir.path, EGM_GIT_COMMIT),
                     0, std::nullopt});
  say(fmt::format("sweep {}: {} cells ({} done, {} to run{}), {} worker{}, db {}, runs {}", sweep_name_,
                  cells_.size(), done, queue_.size(), exhausted ? fmt::format(", {} failed for good", exhausted) : "",
                  workers_.size(), workers_.size() == 1 ? "" : "s", db().path(), dir.path));
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
      std::optional<Received> r = sweep::try_receive_message(transport_);
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

void Coordinator::handle(const Received& r) {
  // A heartbeat that is due goes first: after a pause (a stopped process) it
  // finds out whether another coordinator took the sweep before any message
  // is written.
  beat();
  EGM_REQUIRE(r.source >= 1 && r.source < transport_.size(), ProtocolError, "message from unexpected rank {}",
              r.source);
  WorkerSlot& w = worker(r.source);
  if (const auto* m = std::get_if<sweep::Hello>(&r.message)) return on_hello(w, *m);
  if (const auto* m = std::get_if<sweep::Records>(&r.message)) return on_records(w, *m);
  if (const auto* m = std::get_if<sweep::Result>(&r.message)) return on_result(w, *m);
  if (const auto* m = std::get_if<sweep::Failed>(&r.message)) return on_failed(w, *m);
  if (const auto* m = std::get_if<sweep::Bye>(&r.message)) return on_bye(w, *m);
  EGM_THROW(ProtocolError, "rank {} sent {}, which only the coordinator sends", r.source,
            sweep::kind_name(sweep::kind_of(r.message)));
}

void Coordinator::on_hello(WorkerSlot& w, const sweep::Hello& m) {
  EGM_REQUIRE(w.state == WorkerState::starting, ProtocolError, "rank {} said HELLO twice", w.rank);
  EGM_REQUIRE(m.protocol_version == sweep::kProtocolVersion, ProtocolError,
              "protocol version mismatch: rank {} speaks egm sweep protocol v{}, this coordinator v{}", w.rank,
              m.protocol_version, sweep::kProtocolVersion);
  EGM_REQUIRE(m.error.empty(), ConfigError, "worker rank {} on {} cannot train: {}", w.rank, m.host, m.error);
  if (corpus_sha256_.empty()) {
    corpus_sha256_ = m.corpus_sha256;
    corpus_path_ = m.corpus_path;
  } else {
    EGM_REQUIRE(m.corpus_sha256 == corpus_sha256_, ConfigError,
                "workers read different corpora: rank {} has {} (sha256 {}), an earlier worker sha256 {}; give every "
                "worker the same --data",
                w.rank, m.corpus_path, m.corpus_sha256, corpus_sha256_);
  }
  if (m.git_commit != EGM_GIT_COMMIT)  // through the view: stderr lines would break its redraw
    say(fmt::format("warning: worker rank {} runs egm {}, the coordinator {}", w.rank, m.git_commit, EGM_GIT_COMMIT));
  else if (m.source_diff_sha256 != source_state().diff_sha256)
    say(fmt::format("warning: worker rank {} was built from another modification of egm {} (diff {}), the "
                    "coordinator from {}; its runs record the sha256 only",
                    w.rank, m.git_commit, m.source_diff_sha256.substr(0, 12),
                    source_state().modified() ? std::string(source_state().diff_sha256.substr(0, 12)) : "a clean tree"));
  w.device = device_for(w, m);
  w.hello = m;
  w.state = WorkerState::idle;
  log::debug("worker rank {} on {}: {} cores, torch {}, corpus {}", w.rank, m.host, m.cores, m.torch_version,
             m.corpus_path);
}

// --device cuda (no index) deals the GPUs out: a worker's index among the workers
// on its host is its local rank for launch::place_on_gpu, so consecutive workers,
// which a data-parallel cell takes, land on distinct GPUs, and at most
// runs_per_gpu share one. The index is the launcher's local rank, less one when
// this (GPU-less) coordinator sits before it on the same host; without a launcher
// local rank, the workers on that host that said HELLO before it are counted.
// A worker that cannot be placed stops the sweep at HELLO.
DeviceName Coordinator::device_for(const WorkerSlot& w, const sweep::Hello& hello) const {
  if (device_.is_cuda() && device_.index >= 0)
    EGM_REQUIRE(device_.index < hello.gpus, ConfigError, "--device {}: worker rank {} on {} sees {} GPU{}",
                device_.str(), w.rank, hello.host, hello.gpus, hello.gpus == 1 ? "" : "s");
  if (!device_.is_cuda() || device_.index >= 0) return device_;
  int index = 0;
  if (hello.local_rank >= 0) {
    const int own = process_info().local_rank;
    index = hello.local_rank - (hello.host == host_ && own >= 0 && own < hello.local_rank ? 1 : 0);
  } else {
    for (const WorkerSlot& other : workers_)
      if (other.state != WorkerState::starting && other.hello.host == hello.host) ++index;
  }
  try {
    return DeviceName{DeviceName::Kind::cuda, launch::place_on_gpu(index, hello.gpus, runs_per_gpu_).device};
  } catch (const Error& e) {
    EGM_THROW(ConfigError, "worker rank {} on {} ({} of its host's workers): {}", w.rank, hello.host, index + 1,
              e.what());
  }
}

void Coordinator::await_hellos() {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.hello_timeout_s));
  auto waiting = [&] {
    return std::any_of(workers_.begin(), workers_.end(),
                       [](const WorkerSlot& w) { return w.state == WorkerState::starting; });
  };
  while (waiting()) {
    if (stop_requested()) EGM_THROW(Error, "stopped by {} while the workers were starting", describe_signal(stop_signal()));
    EGM_REQUIRE(Clock::now() < deadline, Error, "not every worker said HELLO within {} s",
                options_.hello_timeout_s);
    if (std::optional<Received> r = sweep::try_receive_message(transport_)) {
      EGM_REQUIRE(std::holds_alternative<sweep::Hello>(r->message), ProtocolError,
                  "rank {} sent {} before the sweep started", r->source, sweep::kind_name(sweep::kind_of(r->message)));
      handle(*r);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

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

void Coordinator::on_records(WorkerSlot& w, const sweep::Records& m) {
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

void Coordinator::on_result(WorkerSlot& w, const sweep::Result& m) {
  Job* job = current_job(w, m.cell_id, m.run_id, "RESULT");
  if (!job) return release_if_abandoned(w, m.run_id);
  if (w.rank == job->ranks.front()) job->result = m;
  if (m.signal != 0 && job->signal == 0) job->signal = m.signal;
  member_answered(w, *job);
}

void Coordinator::on_failed(WorkerSlot& w, const sweep::Failed& m) {
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
      if (r != w.rank) sweep::send_message(transport_, r, sweep::Stop{"a partner of this run failed", 0});
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

void Coordinator::close_result(Job& job, const sweep::Result& m) {
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
  const sweep::Failed& m = *job.failure;
  // One line for the view, the runs row and cells.last_error (a worker that
  // predates the rule may send LibTorch's whole stack trace in `error`); the
  // full text goes to the attempt_failed event.
  const std::string headline = sweep::failure_headline(m.error);
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
      if (worker(r).state == WorkerState::busy) sweep::send_message(transport_, r, sweep::Stop{text, 0});
  jobs_.erase(it);
}

void Coordinator::on_bye(WorkerSlot& w, const sweep::Bye& m) {
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

// ---- assignment --------------------------------------------------------------------

// Scheduling: strict head of line. The cell at the head of the queue goes to
// the first `ranks` idle workers (lowest ranks first) as soon as that many are
// idle; until then nothing behind it is handed out, even a 1-rank cell that
// would fit. The idle workers sit out at most the longest running attempt, and
// in exchange a k-rank cell cannot starve (a stream of 1-rank cells never keeps
// k workers from being free at once) and nothing deadlocks (k <= workers is
// checked at start; every running attempt ends). Cells keep spec order.
void Coordinator::assign_idle_workers() {
  while (!queue_.empty()) {
    const int64_t cell_id = queue_.front();
    const size_t ranks = static_cast<size_t>(cells_.at(cell_id).ranks);
    std::vector<WorkerSlot*> group;
    for (WorkerSlot& w : workers_)
      if (w.state == WorkerState::idle && group.size() < ranks) group.push_back(&w);
    if (group.size() < ranks) return;  // the head waits; so does everything behind it
    queue_.pop_front();
    assign(group, cell_id);
  }
}

void Coordinator::check_group_sizes(const spec::ExperimentSpec& spec) const {
  const int workers = static_cast<int>(workers_.size());
  std::vector<std::string> too_big;
  for (const std::string& variant : spec.variants)
    if (spec.ranks_for(variant) > workers)
      too_big.push_back(fmt::format("{} (data_parallel {})", variant, spec.ranks_for(variant)));
  EGM_REQUIRE(too_big.empty(), ConfigError,
              "{}: the cells of {} need more workers than this sweep has ({}); start it with at least {} workers "
              "(egm sweep --workers N) or lower data_parallel",
              options_.spec_path, fmt::join(too_big, ", "), workers,
              [&] {
                int most = 1;
                for (const std::string& v : spec.variants) most = std::max(most, spec.ranks_for(v));
                return most;
              }());
}

void Coordinator::assign(const std::vector<WorkerSlot*>& group, int64_t cell_id) {
  CellSlot& cell = cells_.at(cell_id);
  EGM_CHECK(cell.row.status != db::CellStatus::done, "cell {} is done; it must not run again", cell.row.key);
  // ASSIGN carries the config as the database holds it (no tree per ASSIGN): one
  // JSON object, or a damaged row stops the sweep here, naming its cell, before
  // an attempt is opened, rather than in the worker.
  EGM_REQUIRE(is_json_object_text(cell.row.config_json), DbError,
              "{}: cells.config_json of {} is not a JSON object (the database was changed by hand?): {}",
              db().path(), cell.row.key, cell.row.config_json.substr(0, 80));
  WorkerSlot& leader = *group.front();
  std::vector<int> ranks;
  std::vector<const sweep::Hello*> hellos;
  std::vector<std::string> hosts;
  for (WorkerSlot* w : group) {
    ranks.push_back(w->rank);
    hellos.push_back(&w->hello);
    if (std::find(hosts.begin(), hosts.end(), w->hello.host) == hosts.end()) hosts.push_back(w->hello.host);
  }
  db::RunInfo info;
  info.host = fmt::format("{}", fmt::join(hosts, ","));
  info.device = leader.device;
  info.world_size = static_cast<int>(group.size());
  info.backend = expected_backend(leader.device, hellos);
  info.torch_version = leader.hello.torch_version;
  info.git_commit = leader.hello.git_commit;
  if (!leader.hello.source_diff_sha256.empty()) info.source_diff_sha256 = leader.hello.source_diff_sha256;
  // What the compute statement counts: each rank's intra-op threads, and on a
  // GPU its name (the leader's; a group's ranks share a node type).
  info.threads = options_.threads_per_worker;
  // Part of the run's identity (db/reuse.h): known when the worker is this
  // build; a worker of another commit may compute other numbers.
  if (leader.hello.git_commit == EGM_GIT_COMMIT) info.numerics_version = kNumericsVersion;
  if (const DeviceName& d = leader.device; d.is_cuda() && d.index >= 0 &&
      d.index < static_cast<int>(leader.hello.gpu_names.size()) && !leader.hello.gpu_names[d.index].empty())
    info.gpu_name = leader.hello.gpu_names[d.index];
  const int64_t run_id = db().start_attempt(cell_id, info);
  const int attempt = cell.row.attempts + 1;  // what start_attempt numbered it
  cell.row.attempts = attempt;
  cell.row.status = db::CellStatus::running;
  cell.state = CellState::running;

  sweep::Assign a;
  a.cell_id = cell_id;
  a.run_id = run_id;
  a.attempt = attempt;
  a.cell_key = cell.row.key;
  a.variant = cell.row.variant;
  a.seed = static_cast<uint64_t>(cell.row.seed);
  a.config_json = cell.row.config_json;  // checked above
  a.runtime.out_dir = sweep::run_dir(options_.runs_dir, sweep_name_, cell.row.key, cell.row.config_hash);
  a.runtime.threads = options_.threads_per_worker;
  a.runtime.fail_at_step = injected_fail_step(options_.injected_failures, a.variant, a.seed, attempt);
  a.runtime.fail_kind = injected_fail_kind(options_.injected_failures, a.variant, a.seed, attempt);
  a.runtime.checkpoint_interval = options_.checkpoint_interval;
  a.runtime.log_interval = options_.log_interval;
  a.group = ranks;
  for (WorkerSlot* w : group) {
    a.runtime.device = w->device;  // each member its own GPU under --device cuda
    sweep::send_message(transport_, w->rank, a);
  }

  Job job;
  job.cell_id = cell_id;
  job.run_id = run_id;
  job.attempt = attempt;
  job.ranks = ranks;
  job.running = std::set<int>(ranks.begin(), ranks.end());
  job.started = Clock::now();
  jobs_[run_id] = std::move(job);
  for (WorkerSlot* w : group) {
    w->run_id = run_id;
    w->state = WorkerState::busy;
  }
  if (ranks.size() == 1) {
    say(fmt::format("start   {} (attempt {}) on worker {} ({})", cell.row.key, attempt, leader.rank, info.host));
  } else {
    say(fmt::format("start   {} (attempt {}) on workers {} ({}): data-parallel, {} ranks over {}", cell.row.key,
                    attempt, fmt::join(ranks, "+"), info.host, ranks.size(), to_string(info.backend)));
  }
}

// ---- stopping and shutting down ----------------------------------------------------

void Coordinator::begin_stop(int sig) {
  stopping_ = true;
  stop_signal_ = sig;
  stop_deadline_ = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.stop_timeout_s * 1000));
  const int busy = static_cast<int>(jobs_.size());
  const std::string text = fmt::format("interrupted by {}: checkpointing {} running cell{}", describe_signal(sig), busy,
                                       busy == 1 ? "" : "s");
  db().record_event({sweep_id_, std::nullopt, std::nullopt, interruption_kind(sig), text, 0, std::nullopt});
  say(text);
  for (auto& [run_id, job] : jobs_) {
    for (int r : job.running)  // every member: they agree on the step to stop at
      sweep::send_message(transport_, r, sweep::Stop{"interrupted by " + describe_signal(sig), sig});
    job.stop_sent = true;
  }
}

void Coordinator::stop_overdue_jobs() {
  const std::string text = fmt::format(
      "interrupted by {}; no answer to STOP within {:g} s (the next attempt resumes from the last checkpoint)",
      describe_signal(stop_signal_), options_.stop_timeout_s);
  std::vector<int64_t> overdue;
  for (const auto& [run_id, job] : jobs_) overdue.push_back(run_id);
  for (int64_t run_id : overdue) {
    say(fmt::format("stopped {}: {}", cells_.at(jobs_.at(run_id).cell_id).row.key, text));
    abandon_job(run_id, text, /*requeue=*/false);
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
    if (w.state != WorkerState::gone) sweep::send_message(transport_, w.rank, sweep::Shutdown{reason});
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.bye_timeout_s * 1000));
  while (live_workers() > 0 && Clock::now() < deadline) {
    if (record) beat();  // the sweep still says 'running' while the workers leave
    std::optional<Received> r;
    try {
      r = sweep::wait_message(transport_, std::chrono::milliseconds(100));
    } catch (const std::exception& e) {
      if (record) throw;
      log::warn("while shutting down: {}", e.what());
      continue;
    }
    if (!r) continue;
    if (record) {
      handle(*r);
    } else if (r->source >= 1 && r->source < transport_.size() && std::holds_alternative<sweep::Bye>(r->message)) {
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
  const std::vector<db::CellRow> cells = db().list_cells(filter);
  const std::vector<std::string> failed = failed_cell_lines(cells);
  const int64_t done = std::count_if(cells.begin(), cells.end(),
                                     [](const db::CellRow& c) { return c.status == db::CellStatus::done; });
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
      const std::string dir = sweep::run_dir(options_.runs_dir, sweep_name_, c.key, c.config_hash);
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
      if (w.state == WorkerState::busy) sweep::send_message(transport_, w.rank, sweep::Stop{"coordinator error", 0});
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

// ---- liveness ----------------------------------------------------------------------

// sweeps.heartbeat_at every db::kHeartbeatIntervalS while this coordinator
// runs: `egm status` calls a 'running' sweep without one for kStaleAfterS stale.
// Called inside an open transaction (a RECORDS batch), it is written with that
// batch (a savepoint), so a busy sweep adds no transactions of its own.
void Coordinator::beat() {
  if (!setup_ || lost_) return;
  const auto now = Clock::now();
  if (seconds_between(last_heartbeat_, now) < heartbeat_interval_s_) return;
  // Written only while this coordinator still owns the sweep (one UPDATE).
  if (setup_->owner && !db().owned_heartbeat(sweep_id_, *setup_->owner)) {
    lost_ = true;
    throw OwnershipLost("no longer owns the sweep");
  }
  if (!setup_->owner) db().heartbeat(sweep_id_);
  last_heartbeat_ = now;
}

void Coordinator::release_ownership() {
  if (!setup_ || !setup_->owner || lost_) return;
  try {
    db().release_sweep(sweep_id_, *setup_->owner);
  } catch (const std::exception& e) {
    log::warn("releasing sweep {}: {}", sweep_name_, e.what());
  }
}

int Coordinator::lose_ownership(const std::string& /*why*/) {
  view_.close();
  std::string by = "another coordinator";
  try {
    if (const std::optional<db::SweepOwner> o = db().sweep(sweep_id_).owner)
      by = fmt::format("the coordinator pid {} on {}", o->pid, o->host);
  } catch (const std::exception&) {
    // Who took it is only for the line below.
  }
  // Its workers stop (each checkpoints the step it is at, as on a signal: the
  // same bits the new owner's run computes) and leave; nothing is recorded.
  try {
    for (WorkerSlot& w : workers_)
      if (w.state == WorkerState::busy)
        sweep::send_message(transport_, w.rank, sweep::Stop{"the sweep was taken over", 0});
    shutdown_workers("the sweep was taken over by " + by, /*record=*/false);
  } catch (const std::exception& e) {
    log::error("while stopping the workers: {}", e.what());
    workers_left_in_order_ = false;
  }
  std::fprintf(stderr,
               "egm-coordinator: sweep %s was taken over by %s while this coordinator (pid %d on %s) was not "
               "writing its heartbeat; its workers stopped, nothing more written (exit %d)\n",
               sweep_name_.c_str(), by.c_str(), static_cast<int>(::getpid()), host_.c_str(), kExitInterrupted);
  return kExitInterrupted;
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
