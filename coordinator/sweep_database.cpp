// The database side: opening the sweep (setup), the heartbeat that keeps it
// owned, and its ownership released at the end or lost to a takeover.
#include "coordinator/coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <unistd.h>

#include "config/run_config.h"
#include "coordinator/coordinator_internal.h"
#include "db/reuse.h"
#include "egm/version_info.h"
#include "slurm/slurm_env.h"
#include "protocol/run_dirs.h"
#include "util/error.h"
#include "util/log.h"
#include "util/source_state.h"

namespace egm::coordinator {

namespace {

// "base-s0, mope-s0, ... (12 more)": the cells a start linked, for its one line.
std::string reused_keys(const std::vector<db::ReuseLink>& links) {
  std::vector<std::string> keys;
  // At most 8 keys: the start line stays one line even when hundreds of cells were reused.
  for (size_t i = 0; i < links.size() && i < 8; ++i) keys.push_back(links[i].key);
  std::string s = fmt::format("{}", fmt::join(keys, ", "));
  if (links.size() > keys.size()) s += fmt::format(" ({} more)", links.size() - keys.size());
  return s;
}

}  // namespace

using detail::seconds_between;
using detail::OwnershipLost;

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

  const protocol::SweepDir dir =
      protocol::prepare_sweep_dir(options_.runs_dir, {sweep.id, sweep.name, sweep.spec_hash, sweep.created_at});
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
  filter.latest_step = false;  // not shown; a subquery per cell
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
        protocol::send_message(transport_, w.rank, protocol::Stop{"the sweep was taken over", 0});
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

}  // namespace egm::coordinator
