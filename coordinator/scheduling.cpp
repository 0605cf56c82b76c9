// Scheduling: the workers' HELLOs and where each trains (--device cuda deals
// out GPUs), and handing queued cells to idle workers, strict head of line.
#include "coordinator/coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <thread>

#include "config/run_config.h"
#include "egm/version_info.h"
#include "launch/gpu_placement.h"
#include "protocol/run_dirs.h"
#include "util/error.h"
#include "util/json_limits.h"
#include "util/log.h"
#include "util/process_info.h"
#include "util/source_state.h"
#include "util/stop_signal.h"

namespace egm::coordinator {
namespace {

// The backend the members will use (run/device.h's one rule, which the
// workers' make_communicator applies too); the worker's start record then
// replaces the prediction with what it really used.
Backend expected_backend(const DeviceName& device, const std::vector<const protocol::Hello*>& members) {
  const bool nccl = std::all_of(members.begin(), members.end(), [](const protocol::Hello* h) { return h->nccl; });
  return backend_for(device, static_cast<int>(members.size()), nccl);
}

}  // namespace

void Coordinator::on_hello(WorkerSlot& w, const protocol::Hello& m) {
  EGM_REQUIRE(w.state == WorkerState::starting, ProtocolError, "rank {} said HELLO twice", w.rank);
  EGM_REQUIRE(m.protocol_version == protocol::kProtocolVersion, ProtocolError,
              "protocol version mismatch: rank {} speaks egm sweep protocol v{}, this coordinator v{}", w.rank,
              m.protocol_version, protocol::kProtocolVersion);
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
DeviceName Coordinator::device_for(const WorkerSlot& w, const protocol::Hello& hello) const {
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
    if (std::optional<protocol::Received> r = protocol::try_receive_message(transport_)) {
      EGM_REQUIRE(std::holds_alternative<protocol::Hello>(r->message), ProtocolError,
                  "rank {} sent {} before the sweep started", r->source, protocol::kind_name(protocol::kind_of(r->message)));
      handle(*r);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
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
  std::vector<const protocol::Hello*> hellos;
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

  protocol::Assign a;
  a.cell_id = cell_id;
  a.run_id = run_id;
  a.attempt = attempt;
  a.cell_key = cell.row.key;
  a.variant = cell.row.variant;
  a.seed = static_cast<uint64_t>(cell.row.seed);
  a.config_json = cell.row.config_json;  // checked above
  a.runtime.out_dir = protocol::run_dir(options_.runs_dir, sweep_name_, cell.row.key, cell.row.config_hash);
  a.runtime.threads = options_.threads_per_worker;
  a.runtime.fail_at_step = injected_fail_step(options_.injected_failures, a.variant, a.seed, attempt);
  a.runtime.fail_kind = injected_fail_kind(options_.injected_failures, a.variant, a.seed, attempt);
  a.runtime.checkpoint_interval = options_.checkpoint_interval;
  a.runtime.log_interval = options_.log_interval;
  a.group = ranks;
  for (WorkerSlot* w : group) {
    a.runtime.device = w->device;  // each member its own GPU under --device cuda
    protocol::send_message(transport_, w->rank, a);
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

}  // namespace egm::coordinator
