// egm sweep's work (egm-torch; its flags: cmd_sweep.cpp): runs a spec's
// cells on this machine by launching
//   mpirun -np 1 egm-coordinator SPEC ... : -np N egm-worker --data PATH
// (built by launch/launch_command.h, which egm submit calls too) as its child:
// a stop signal is passed on to mpirun and remembered, so the sweep exits 75
// naming it whichever it was (mpirun answers SIGINT and SIGTERM with 1);
// otherwise mpirun's exit status is ours (0 done, 1 a cell failed for good,
// 2 error). --print-command prints the command it would run here instead.
#include <fmt/format.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "cli/torch_verbs.h"
#include "config/run_config.h"
#include "data/corpus_source.h"
#include "db/results_db.h"
#include "db/reuse.h"
#include "launch/gpu_placement.h"
#include "launch/launch_command.h"
#include "launch/launch_options.h"
#include "sequential/look.h"
#include "sequential/loop.h"
#include "sequential/sequence_lock.h"
#include "slurm/slurm_env.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "spec/sweep_setup.h"
#include "train/cuda_memory.h"
#include "train/memory_estimate.h"
#include "train/step_benchmark.h"
#include "model/gpt.h"
#include "util/error.h"
#include "util/json_limits.h"
#include "util/log.h"
#include "util/files.h"
#include "util/process_info.h"
#include "util/sha256.h"
#include "util/stop_signal.h"

namespace egm::cli {
namespace {

// A plain egm sweep: the launch as a child, so whichever stop signal came
// (Ctrl-C, SIGTERM, Slurm's SIGUSR2) the sweep exits 75 and names it; mpirun
// itself answers SIGINT and SIGTERM with 1 and passes them to the ranks as
// SIGTERM (sequential/signal_relay.h). A launch that ended without a stop
// signal, or finished or failed for good in spite of one, keeps its own exit status.
[[noreturn]] void run_one_launch(const std::vector<std::string>& cmd, const std::string& db_path,
                                 const std::string& sweep) {
  sequential::StopRelay relay;
  const int status = relay.run_child(cmd);
  const int signal = sequential::StopRelay::signal();
  if (status == 0 || signal == 0) std::exit(status);
  const std::optional<db::SweepStatus> ended = sequential::sweep_status(db_path, sweep);
  if (ended == db::SweepStatus::done || ended == db::SweepStatus::failed) std::exit(status);
  std::cout << fmt::format("egm sweep: stopped by {}; the running cells checkpointed; run the same command again to "
                           "resume (exit {})",
                           describe_stop_signal(signal), kExitInterrupted)
            << std::endl;
  std::exit(kExitInterrupted);
}

// CUDA devices this process sees (0 on a CPU-only build or a node without GPUs).
int visible_gpu_count() { return static_cast<int>(torch::cuda::device_count()); }

// True when the ranks may start on other hosts too: a Slurm allocation of
// several nodes, or launcher arguments that name hosts.
bool spans_hosts(const SweepOptions& o) {
  const slurm::SlurmEnv env = slurm::read_slurm_env();
  if (env.nodes && *env.nodes > 1) return true;
  return launch::names_hosts(launch::split_launcher_args(o.mpirun_args));
}

// MB of memory this host has available now (MemAvailable), 0 when unknown.
double host_available_mb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb / 1024.0;
  return 0;
}

// What a worker process holds before its model (LibTorch, CUDA's context on a
// GPU): measured, results/BENCHMARKS.md ("Memory estimate").
constexpr double kWorkerRuntimeMb = 400, kCudaContextMb = 600;

// Refuses a sweep whose runs cannot all fit where they are placed: the largest
// cell's estimate (train/memory_estimate.h; a data-parallel rank holds its
// share of the batch) times the runs that share the host's memory or one GPU.
void require_memory_fits(const spec::ExperimentSpec& spec, const DeviceName& device, int runs_sharing,
                         const std::string& where, double have_mb) {
  if (have_mb <= 0 || runs_sharing < 1) return;
  const bool cuda = device.is_cuda();
  MemoryEstimate worst;
  std::string worst_variant;
  for (const std::string& variant : spec.variants) {
    RunConfig c = spec::cell_config(spec, variant, spec.seeds.front());
    c.train.batch_size = std::max<int64_t>(1, c.train.batch_size / spec.ranks_for(variant));
    const MemoryEstimate e = estimate_training_memory(c, cuda, cuda ? kCudaContextMb : kWorkerRuntimeMb);
    if (e.total_mb() > worst.total_mb()) worst = e, worst_variant = variant;
  }
  const double need = worst.total_mb() * runs_sharing;
  EGM_REQUIRE(need <= have_mb, ConfigError,
              "{}: {} run{} sharing {} need about {:.0f} MB but it has {:.0f} MB; a {} cell needs {}; pass fewer "
              "--workers{} or lower train.batch_size / model.block_size",
              spec.source, runs_sharing, runs_sharing == 1 ? "" : "s", where, need, have_mb, worst_variant,
              worst.summary(), cuda ? ", lower runs_per_gpu" : "");
}

// A run config without its seed, as text: what cells of one configuration share.
std::string config_without_seed(nlohmann::json config) {
  if (config.contains("train") && config["train"].is_object()) config["train"].erase("seed");
  return config.dump();
}

// Wall seconds of the done attempts in `db_path` (when it exists), by run
// configuration without the seed: what a cell of that configuration took here before.
std::map<std::string, std::vector<double>> measured_seconds(const std::string& db_path) {
  std::map<std::string, std::vector<double>> seconds;
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return seconds;
  db::ResultsDb db = db::open_for_reading(db_path);
  db::CellFilter done;
  done.statuses = {db::to_string(db::CellStatus::done)};
  done.include_superseded = true;
  done.latest_step = false;
  std::map<int64_t, std::string> config_of;  // cell id -> its configuration
  for (const db::CellRow& c : db.list_cells(done)) {
    try {
      config_of[c.id] = config_without_seed(parse_json(c.config_json, JsonLimits::user(), "cells.config_json"));
    } catch (const JsonError&) {  // a cell egm cannot read does not count
    }
  }
  db::CellFilter runs;
  runs.statuses = {db::to_string(db::RunStatus::done)};
  runs.include_superseded = true;
  for (const db::RunRow& r : db.list_runs(runs)) {
    auto it = config_of.find(r.cell_id);
    if (it != config_of.end() && r.ended_at && *r.ended_at > r.started_at)
      seconds[it->second].push_back(*r.ended_at - r.started_at);
  }
  return seconds;
}

// What a launch would do with one cell (--dry-run): train it, find it done in
// its own sweep already (a resume), or link it to a finished run of the same
// identity (db/reuse.h), as opening the sweep would.
struct CellPlan {
  enum class Kind { train, done, link } kind = Kind::train;
  std::string from;  // link: the run it takes, as its reused_from would say
};

// The identity parts this launch would train with, for --dry-run: its device
// kind, the corpus's sha256 (none when the corpus is not there to hash:
// `note` says so), the world size of each variant and kNumericsVersion.
std::optional<db::ReuseLaunch> dry_run_launch(const SweepOptions& o, const spec::ExperimentSpec& spec,
                                              std::string& note) {
  const std::string corpus = std::filesystem::absolute(locate_corpus(o.data)).lexically_normal().string();
  if (!file_exists(corpus)) {
    note = fmt::format("reuse: not checked, no corpus at {} (its sha256 is part of a run's identity)", corpus);
    return std::nullopt;
  }
  const DeviceName device = launch::resolve_device(o.launch.device, spec.device);
  return db::ReuseLaunch{sha256_hex(read_file(corpus)), device_kind(device), kNumericsVersion,
                         [&spec](const std::string& variant) { return spec.ranks_for(variant); }};
}

// --dry-run: what this launch would do with each of `cells` (spec order). A
// cell its own sweep has done (same key and run config; not with --new-sweep,
// which keeps that sweep aside) is done; with reuse on, a cell whose identity
// matches a finished run in the database or a --reuse-from input is linked;
// the rest train. Read only: nothing is written, a missing database is not created.
std::vector<CellPlan> plan_cells(const SweepOptions& o, const spec::ExperimentSpec& spec,
                                 const std::vector<spec::Cell>& cells, const std::string& db_path,
                                 const std::vector<db::CheckedInput>& from, std::string& note) {
  std::vector<CellPlan> plan(cells.size());
  std::error_code ec;
  std::optional<db::ResultsDb> db;
  if (std::filesystem::exists(db_path, ec)) db.emplace(db::open_for_reading(db_path));
  std::map<std::string, std::string> done;  // key -> run config hash, of the cells the sweep has done
  if (db && !o.launch.new_sweep)
    if (const std::optional<db::SweepRow> row = db->find_sweep(spec.name)) {
      db::CellFilter f;
      f.sweep_id = row->id;
      f.statuses = {db::to_string(db::CellStatus::done)};
      f.latest_step = false;
      for (const db::CellRow& c : db->list_cells(f)) done.emplace(c.key, c.config_hash);
    }
  std::vector<db::CellRow> wanted;
  std::vector<size_t> at;  // wanted[k] is cells[at[k]]
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto it = done.find(cells[i].key);
    if (it != done.end() && it->second == cells[i].config_hash) {
      plan[i].kind = CellPlan::Kind::done;
      continue;
    }
    db::CellRow row;
    row.key = cells[i].key;
    row.variant = cells[i].variant;
    row.config_hash = cells[i].config_hash;
    wanted.push_back(std::move(row));
    at.push_back(i);
  }
  if (o.launch.no_reuse || !spec.reuse) return plan;
  const std::optional<db::ReuseLaunch> launch = dry_run_launch(o, spec, note);
  if (!launch) return plan;
  const std::vector<std::optional<std::string>> links =
      db::planned_links(db ? &*db : nullptr, wanted, *launch, from);
  for (size_t k = 0; k < links.size(); ++k)
    if (links[k]) plan[at[k]] = CellPlan{CellPlan::Kind::link, *links[k]};
  return plan;
}

// --dry-run's closing lines: the training compute of the cells to train, what
// the others are, and a wall time for the cells to train from the done cells
// of their configurations in `db_path` (their median each).
void print_dry_run_totals(const std::vector<CellPlan>& plan, double total_flop, double cell_seconds,
                          int64_t estimated, int64_t unmeasured, const std::string& db_path, int workers) {
  int64_t linked = 0, done = 0;
  for (const CellPlan& p : plan) {
    linked += p.kind == CellPlan::Kind::link;
    done += p.kind == CellPlan::Kind::done;
  }
  const int64_t cells = static_cast<int64_t>(plan.size()), trained = cells - linked - done;
  if (linked == 0 && done == 0)
    std::cout << fmt::format("total: {:.3g} FLOP of training over {} cells\n", total_flop, cells);
  else
    std::cout << fmt::format("total: {:.3g} FLOP of training over the {} of {} cells to train; {} linked to finished "
                             "runs of the same identity instead (--no-reuse trains them), {} done already\n",
                             total_flop, trained, cells, linked, done);
  if (trained == 0) {
    std::cout << "wall time: none, nothing to train\n";
    return;
  }
  if (estimated == 0) {
    std::cout << fmt::format("wall time: no done cell of these configurations in {} to estimate from\n", db_path);
    return;
  }
  const int w = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(workers, trained)));
  std::cout << fmt::format(
      "wall time: about {} with {} worker{} ({} of {} cells priced at the median of the done cells of their "
      "configuration in {}{})\n",
      db::format_duration(cell_seconds / w * static_cast<double>(estimated + unmeasured) / static_cast<double>(estimated)),
      w, w == 1 ? "" : "s", estimated, estimated + unmeasured, db_path,
      unmeasured ? "; the others counted at their average" : "");
}

// --dry-run: every cell the spec expands to, with what one run of it needs
// (train/memory_estimate.h; the model is built once per variant and grid
// point to count its parameters), its training compute (6 N per token plus
// attention, step_benchmark.h, times max_steps) and what this launch would do
// with it (plan_cells: train, done already, or linked to a finished run and
// from where), then the compute and, where the database has done cells of the
// same configurations, the wall time of the cells to train. Nothing is written.
void list_cells(const SweepOptions& o, const spec::ExperimentSpec& spec, const spec::SweepSize& size,
                const std::string& db_path, int workers, const std::vector<db::CheckedInput>& from,
                const std::string& what = "") {
  const bool cuda = spec.device && spec.device->is_cuda();
  const std::vector<spec::Cell> cells = spec::expand(spec);
  std::string note;
  const std::vector<CellPlan> plan = plan_cells(o, spec, cells, db_path, from, note);
  std::cout << fmt::format("sweep {}: {} (dry run{}: nothing trained, nothing written)\n", spec.name, size.product(),
                           what);
  if (!note.empty()) std::cout << note << "\n";
  std::cout << fmt::format("  {:<28} {:>8}  {:>12}  {:>10}  {:<6} {}\n", "cell", "steps", "memory/run", "FLOP/run",
                           "launch", "grid point");
  std::map<std::string, std::pair<double, double>> per_config;  // variant + point -> (MB, FLOP)
  double total_flop = 0;
  // What done cells took, read only when a cell is to train (every done cell of the file is read).
  const bool trains = std::any_of(plan.begin(), plan.end(), [](const CellPlan& p) { return p.kind == CellPlan::Kind::train; });
  const std::map<std::string, std::vector<double>> measured =
      trains ? measured_seconds(db_path) : std::map<std::string, std::vector<double>>{};
  double cell_seconds = 0;
  int64_t estimated = 0, unmeasured = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    const spec::Cell& c = cells[i];
    const std::string point = c.point ? c.point->label() : "";
    auto it = per_config.find(c.variant + "|" + point);
    if (it == per_config.end()) {
      RunConfig cfg = c.config;
      cfg.train.batch_size = std::max<int64_t>(1, cfg.train.batch_size / spec.ranks_for(c.variant));
      const int64_t parameters = GPT(cfg.model)->num_parameters();
      const MemoryEstimate m =
          estimate_training_memory(cfg, parameters, cuda, cuda ? kCudaContextMb : kWorkerRuntimeMb);
      const double flop = training_flops_per_step(c.config, parameters) * static_cast<double>(c.config.train.max_steps);
      it = per_config.emplace(c.variant + "|" + point, std::make_pair(m.total_mb(), flop)).first;
    }
    const CellPlan& p = plan[i];
    const char* kind = p.kind == CellPlan::Kind::train ? "train" : p.kind == CellPlan::Kind::done ? "done" : "link";
    std::string line = fmt::format("  {:<28} {:>8}  {:>9.0f} MB  {:>10.3g}  {:<6} {}", c.key,
                                   c.config.train.max_steps, it->second.first, it->second.second, kind, point);
    if (p.kind == CellPlan::Kind::link) line += fmt::format("{}takes {}", point.empty() ? "" : "  ", p.from);
    std::cout << line << "\n";
    if (p.kind != CellPlan::Kind::train) continue;  // only the cells to train cost compute
    total_flop += it->second.second;
    auto m = measured.find(config_without_seed(to_json(c.config)));
    if (m == measured.end() || m->second.empty()) {
      ++unmeasured;
      continue;
    }
    std::vector<double> v = m->second;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    cell_seconds += v[v.size() / 2];  // the median of what that configuration took
    ++estimated;
  }
  print_dry_run_totals(plan, total_flop, cell_seconds, estimated, unmeasured, db_path, workers);
}

// How many workers the launch takes, checked against this host where it is the
// one that runs them: its GPUs (and runs_per_gpu), then the memory each
// worker needs (one line, exit 2, before anything starts).
int checked_workers(const SweepOptions& o, const spec::ExperimentSpec& spec, const DeviceName& device, int cells,
                    int ranks) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const bool one_host = !spans_hosts(o);  // only then are this host's GPUs and memory the ones that count
  int per_host = cores;  // workers that fit on this host by default
  // --print-command renders the launch for another host (a batch job's node):
  // its GPUs are checked there, at the workers' HELLO, before the database opens.
  if (device.is_cuda() && !o.print_command) {
    const int gpus = visible_gpu_count();
    const std::string host = process_info().host;
    EGM_REQUIRE(gpus >= 1, ConfigError,
                "--device {}: no GPU is visible on {} (CUDA_VISIBLE_DEVICES, or a node without GPUs); use --device "
                "cpu or run where GPUs are",
                device.str(), host);
    EGM_REQUIRE(device.index < gpus, ConfigError, "--device {}: {} has {} GPU{} (cuda:0..cuda:{})", device.str(),
                host, gpus, gpus == 1 ? "" : "s", gpus - 1);
    per_host = device.index < 0 ? gpus * spec.runs_per_gpu : spec.runs_per_gpu;
    if (o.workers > 0 && one_host) {
      if (device.index < 0) {
        launch::require_gpu_slots(o.workers, gpus, spec.runs_per_gpu, host);
      } else {
        EGM_REQUIRE(o.workers <= spec.runs_per_gpu, ConfigError,
                    "--device {}: {} workers share one GPU but runs_per_gpu is {}; pass --workers {} or raise "
                    "runs_per_gpu in the spec",
                    device.str(), o.workers, spec.runs_per_gpu, spec.runs_per_gpu);
      }
    }
  }
  const int workers = o.workers > 0 ? o.workers : std::max(ranks, std::min(per_host, cells));
  launch::require_enough_workers(workers, ranks, o.launch.spec_path);
  // Memory, where this host is the one that runs them (a batch job's nodes check nothing here).
  if (!o.print_command && one_host) {
    if (device.is_cuda()) {
      const int gpu = std::max(0, device.index);
      const int sharing = device.index < 0 ? std::min(workers, spec.runs_per_gpu) : workers;
      require_memory_fits(spec, device, sharing, fmt::format("GPU {} on {}", gpu, process_info().host),
                          cuda_device_memory_mb(gpu).value_or(0));
    }
    require_memory_fits(spec, DeviceName{}, device.is_cuda() ? 0 : workers,
                        fmt::format("the memory of {}", process_info().host), host_available_mb());
  }
  return workers;
}

}  // namespace

void run_sweep(SweepOptions o) {
  // Checked here first so a bad spec fails before anything starts (and the
  // database is not touched); the coordinator checks it again.
  // A spec over --max-cells is refused before its cells are built (one line, the product of its axes).
  const spec::ExperimentSpec spec = spec::load_spec(o.launch.spec_path, o.launch.grid, o.max_cells);
  const spec::SweepSize size = spec::sweep_size(spec);
  const int cells = static_cast<int>(size.cells);
  // --until (the flags over the spec's "until" field) is checked before
  // anything runs, as the spec is (one line, exit 2).
  const sequential::UntilOptions until = sequential::resolve_until(o.until, spec);
  std::vector<std::string> claims;
  if (until.active()) {
    claims = sequential::check_until(until, spec);
    EGM_REQUIRE(!o.print_command, ConfigError,
                "--until runs the sweep several times and looks in between; it has no single command to print "
                "(--until none runs the spec's seeds as one launch)");
  }
  std::vector<db::CheckedInput> reuse_from;
  // --reuse-from's inputs: one line each, before anything runs or is written (the coordinator checks again).
  if (!o.launch.reuse_from.empty()) {
    EGM_REQUIRE(spec.reuse, ConfigError,
                "--reuse-from: spec {} says \"reuse\": false; drop the flag or the field; nothing written",
                o.launch.spec_path);
    reuse_from = db::check_reuse_sources(o.launch.reuse_from,
                                         o.launch.db_path.empty() ? db::default_db_path() : o.launch.db_path);
  }
  if (o.dry_run) {
    const std::string db_path = o.launch.db_path.empty() ? db::default_db_path() : o.launch.db_path;
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int workers = o.workers > 0 ? o.workers : std::min(cores, cells);
    if (!until.active()) return list_cells(o, spec, size, db_path, workers, reuse_from);
    // A sequential sweep: its worst case, every seed of the budget run.
    spec::ExperimentSpec worst = spec;
    uint64_t next = worst.seeds.empty() ? 0 : *std::max_element(worst.seeds.begin(), worst.seeds.end()) + 1;
    while (static_cast<int64_t>(worst.seeds.size()) < until.max_seeds) worst.seeds.push_back(next++);
    return list_cells(o, worst, spec::sweep_size(worst), db_path, workers, reuse_from,
                      fmt::format(", the worst case of --until {}: all {} seeds of the budget", until.claims,
                                  until.max_seeds));
  }
  if (!o.print_command) std::cout << fmt::format("sweep {}: {}", spec.name, size.product()) << std::endl;
  // A data-parallel cell takes that many workers at once (coordinator/README.md).
  int ranks = 1;
  for (const auto& variant : spec.variants) ranks = std::max(ranks, spec.ranks_for(variant));

  // The device, resolved once and passed on explicitly; CUDA is checked against
  // this build and this host's GPUs before anything starts.
  const DeviceName device = launch::resolve_device(o.launch.device, spec.device);
  o.launch.device = device;
  require_buildable(device);
  const int workers = checked_workers(o, spec, device, cells, ranks);

  const std::string data = existing_corpus(o.data);
  std::string view = o.view;
  if (view == "auto") view = o.print_command || !isatty(STDOUT_FILENO) ? "plain" : "tty";
  launch::SweepLaunch l;
  l.options = o.launch;
  if (l.options.db_path.empty()) l.options.db_path = db::default_db_path();
  l.workers = workers;
  l.largest_cell_ranks = ranks;
  l.data = data;
  l.view = view;
  l.mpirun = o.mpirun;
  l.mpirun_args = o.mpirun_args;
  l.bin_dir = launch::own_binary_dir();
  l.hosts = slurm::read_slurm_env().in_job() ? launch::RankHosts::slurm_job : launch::RankHosts::this_host;
  const std::vector<std::string> cmd = launch::sweep_launch_command(l);
  const std::string line = launch::shell_command_line(cmd);
  if (o.print_command) {
    std::cout << line << "\n";
    return;
  }
  log::debug("running {}", line);
  // A sequential sweep's refusals first (read-only: nothing written when they refuse) ...
  std::vector<uint64_t> seeds = spec.seeds;
  if (until.active()) {
    if (!o.launch.new_sweep) seeds = sequential::seeds_so_far(l.options.db_path, spec);
    if (!o.launch.new_sweep) sequential::require_same_sequence(until, l.options.db_path, spec.name);
    sequential::require_budget(until, seeds, spec, l.options.db_path);
  }
  // ... then one sequence per sweep (sequential/sequence_lock.h): held from here to the loop's end.
  std::optional<sequential::SequenceLock> sequence_lock;
  if (until.active()) sequence_lock.emplace(l.options.db_path, spec.name);
  // A sweep running elsewhere is refused here, in one line, before mpirun
  // starts a rank (the coordinator decides again when it opens the sweep).
  {
    db::Claimant me{process_info().host, static_cast<int64_t>(::getpid()), std::nullopt, o.launch.takeover};
    if (const auto job = slurm::read_slurm_env().job_id) me.slurm_job = std::to_string(*job);
    spec::precheck_owner(l.options.db_path, spec.name, me);
  }
  if (!until.active()) run_one_launch(cmd, l.options.db_path, spec.name);

  // --until (src/sequential/loop.h): launch, look, and add seeds until the
  // claims are settled or the budget is spent; the same command resumes.
  sequential::UntilRun run{until, claims, spec, o.launch.spec_path, l.options.db_path, o.launch.extend,
                           o.launch.new_sweep};
  sequential::MpirunLauncher launcher(l);
  if (const int status = sequential::run_until(run, launcher, std::cout); status != 0) std::exit(status);
}

}  // namespace egm::cli
