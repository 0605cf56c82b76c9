// egm submit SPEC --slurm: runs a sweep as one Slurm job. Renders
// slurm/egm-sweep.sbatch.tmpl around the mpirun line that egm sweep would run
// inside the job (launch/launch_command.h, the same function egm sweep calls;
// no LibTorch is loaded), writes the script next to the results database,
// creates the sweep there (as `egm sweep` would, running nothing), then calls
// sbatch and stores the job id with the sweep, where `egm status` finds it.
// slurm/README.md describes the job's life.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "sequential/look.h"
#include "sequential/until_options.h"
#include "data/corpus_source.h"
#include "db/results_db.h"
#include "db/reuse.h"
#include "launch/launch_command.h"
#include "launch/launch_options.h"
#include "slurm/batch_script.h"
#include "slurm/slurm_commands.h"
#include "spec/experiment_spec.h"
#include "spec/sweep_setup.h"
#include "util/error.h"
#include "util/files.h"
#include "util/sha256.h"

namespace egm::cli {
namespace {

namespace fs = std::filesystem;

struct SubmitOptions {
  launch::LaunchOptions launch;  // spec, --db, --device, ...: passed on to egm sweep in the job
  bool slurm = false;
  int workers = 0;  // 0: one per cell; with GPUs, GPUs per node x runs_per_gpu x nodes at most
  std::string time = "4:00:00";
  std::string partition, account, gpus_per_node;
  std::vector<std::string> params;  // name=value, any batch parameter
  bool dry_run = false;
  bool parsable = false;
  std::string sbatch = "sbatch";
  std::string data;  // passed on to egm sweep in the job
  int64_t max_cells = spec::kDefaultMaxCells;  // a larger spec is refused before anything is written
  sequential::UntilFlags until;  // a sequential sweep: the job runs egm sweep --until (until_options.h)
};

// A positive count written in plain digits, or a ConfigError built from `why`.
int plain_count(const std::string& text, const std::string& why) {
  // At most 5 digits: stoi cannot overflow, and no job has 100,000 nodes or GPUs per node.
  const bool digits = !text.empty() && text.size() < 6 &&
                      std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  EGM_REQUIRE(digits && std::stoi(text) >= 1, ConfigError, "{}", why);
  return std::stoi(text);
}

// The count in --gpus-per-node's [type:]count ("4", "a100:4").
int gpu_count(const std::string& gpus_per_node) {
  return plain_count(gpus_per_node.substr(gpus_per_node.rfind(':') + 1),
                     fmt::format("--gpus-per-node {}: expected [type:]count with a count of at least 1", gpus_per_node));
}

// The nodes the job asks for (--param nodes=N; 1 by default).
int node_count(const std::vector<std::string>& params) {
  int nodes = 1;
  for (const std::string& kv : params)
    if (kv.rfind("nodes=", 0) == 0)
      nodes = plain_count(kv.substr(6), fmt::format("--param {}: egm submit needs a plain node count (a range would "
                                                    "leave the workers per node open)",
                                                    kv));
  return nodes;
}

slurm::BatchParams batch_params(const SubmitOptions& o, const std::string& sweep_name, int workers,
                                const fs::path& db_dir, const std::string& launch) {
  slurm::BatchParams p = {
      {"workers", std::to_string(workers)},
      {"time", o.time},
      {"launch_command", launch},
      {"job_name", "egm-" + sweep_name},
      // %j is Slurm's job id: each submission of the sweep logs to its own file beside the database.
      {"output", (db_dir / (sweep_name + "-%j.out")).string()},
      // The job starts where egm submit ran, so relative paths in the spec mean the same there.
      {"chdir", fs::current_path().string()},
      {"cpus_per_task", std::to_string(o.launch.threads_per_worker)},
  };
  if (!o.partition.empty()) p["partition"] = o.partition;
  if (!o.account.empty()) p["account"] = o.account;
  if (!o.gpus_per_node.empty()) p["gpus_per_node"] = o.gpus_per_node;
  for (const std::string& kv : o.params) {
    const auto eq = kv.find('=');
    EGM_REQUIRE(eq != std::string::npos && eq > 0, ConfigError, "--param '{}' is not name=value", kv);
    const std::string name = kv.substr(0, eq);
    EGM_REQUIRE(name != "launch_command" && name != "workers", ConfigError,
                "--param {}: set by egm submit (use --workers and the sweep options instead)", name);
    p[name] = kv.substr(eq + 1);  // unknown names are refused by the renderer, with the valid ones
  }
  return p;
}

void run_submit(SubmitOptions o) {
  EGM_REQUIRE(o.slurm, ConfigError, "egm submit needs --slurm (Slurm is the only scheduler egm submits to)");
  EGM_REQUIRE(!o.launch.takeover, ConfigError,
              "egm submit --takeover: a batch job takes over on its own when its owner is gone; run egm sweep "
              "--takeover on the owner's host to take a sweep from a stopped coordinator");
  // A bad spec, or one over --max-cells, stops here: nothing written.
  const spec::ExperimentSpec spec = spec::load_spec(o.launch.spec_path, o.launch.grid, o.max_cells);
  const spec::SweepSize size = spec::sweep_size(spec);
  const int cells = static_cast<int>(size.cells);
  // A sequential sweep (--until, or the spec's "until"), checked here as egm sweep checks it.
  const sequential::UntilOptions until = sequential::resolve_until(o.until, spec);
  if (until.active()) sequential::check_until(until, spec);
  // GPUs asked of Slurm mean training on them, unless --device says otherwise.
  std::optional<DeviceName> spec_device = spec.device;
  if (!spec_device && !o.gpus_per_node.empty()) spec_device = DeviceName{DeviceName::Kind::cuda, -1};
  const DeviceName device = launch::resolve_device(o.launch.device, spec_device);
  o.launch.device = device;
  require_buildable(device);
  int slots = cells;  // workers that can train at once
  if (device.is_cuda()) {
    EGM_REQUIRE(!o.gpus_per_node.empty(), ConfigError,
                "--device {} needs GPUs in the job: pass --gpus-per-node G (G x runs_per_gpu workers per node)",
                device.str());
    const int nodes = node_count(o.params), gpus = device.index < 0 ? gpu_count(o.gpus_per_node) : 1;
    slots = nodes * gpus * spec.runs_per_gpu;
    EGM_REQUIRE(o.workers <= slots, ConfigError,
                "--workers {}: {} node(s) x {} GPU(s) x runs_per_gpu {} hold {} workers; pass --workers {} or ask "
                "for more GPUs",
                o.workers, nodes, gpus, spec.runs_per_gpu, slots, slots);
  }
  // No more workers than cells: an extra one would only wait for work that never comes.
  const int workers = o.workers > 0 ? o.workers : std::max(1, std::min(cells, slots));
  // Absolute: the job may start in another directory (and so may a requeued attempt).
  const std::string db_path =
      fs::absolute(o.launch.db_path.empty() ? db::default_db_path() : o.launch.db_path).lexically_normal().string();
  const fs::path db_dir = fs::path(db_path).parent_path();
  // --reuse-from's inputs, checked as egm sweep checks them: a bad one is refused now, not in the job.
  db::check_reuse_sources(o.launch.reuse_from, db_path);
  // The job's egm sweep --until goes on from the seeds the sweep has run: a
  // budget below them is refused now, and the sweep is opened below with them
  // (the spec file lists only the first ones; the stored spec, every seed run).
  spec::ExperimentSpec opened = spec;
  if (until.active() && !o.launch.new_sweep) {
    const std::vector<uint64_t> seeds = sequential::seeds_so_far(db_path, spec);
    sequential::require_same_sequence(until, db_path, spec.name);
    sequential::require_budget(until, seeds, spec, db_path);
    if (seeds != spec.seeds) opened = spec::with_seeds(spec, seeds);
  }

  // The job runs the sweep as it is now: --new-sweep and --extend are applied
  // here, once, so the job (and each requeued attempt) loads that sweep instead
  // of superseding it again (or taking a spec edited after the submission).
  launch::SweepLaunch l;
  l.options = o.launch;
  l.options.db_path = db_path;
  l.options.new_sweep = false;
  l.options.extend = false;
  l.workers = workers;
  for (const std::string& variant : spec.variants)
    l.largest_cell_ranks = std::max(l.largest_cell_ranks, spec.ranks_for(variant));
  launch::require_enough_workers(l.workers, l.largest_cell_ranks, l.options.spec_path);
  l.data = existing_corpus(o.data);
  l.bin_dir = launch::own_binary_dir();
  l.hosts = launch::RankHosts::slurm_job;
  // A sequential sweep is several launches with looks in between: the job runs
  // egm sweep --until, which makes them (and resumes from the seeds the sweep
  // has when the job is requeued); otherwise the one mpirun line.
  const std::string launch = launch::shell_command_line(
      until.active() ? launch::sweep_verb_command(l, sequential::until_arguments(until)) : launch::sweep_launch_command(l));
  const std::string script_path = (db_dir / (spec.name + ".sbatch")).string();
  const std::string script = slurm::render_batch_script(batch_params(o, spec.name, workers, db_dir, launch));

  // The summary on stderr, the script alone on stdout, so `egm submit --dry-run > job.sbatch` works.
  if (o.dry_run) {
    std::cerr << fmt::format("egm submit: sweep {}: {}\n", spec.name, size.product());
    std::cout << script;
    std::cerr << fmt::format("egm submit: dry run: not written, not submitted (would write {} and run sbatch)\n",
                             script_path);
    return;
  }

  // The sweep and its cells exist before the job does, so `egm status` shows
  // it pending, and the job id has a row to live in.
  // The spec read above (with the seeds a sequential sweep has run), not the file again: it may have changed since.
  // Its corpus is recorded now (or checked against the sweep's: another corpus is refused here).
  spec::SweepOpening opening;
  {
    const std::string bytes = read_file(l.data);
    opening.corpus = db::SweepCorpus{sha256_hex(bytes), static_cast<int64_t>(bytes.size()),
                                     fs::absolute(l.data).lexically_normal().string()};
  }
  spec::SweepSetup setup =
      spec::open_sweep(opened, db_path, spec::changed_spec(o.launch.new_sweep, o.launch.extend), opening);
  const db::SweepRow& sweep = setup.sweep.sweep;
  // A job that is still queued or running would train the same cells as the new one.
  if (sweep.slurm_job_id) {
    const slurm::JobState state = slurm::query_job_state(*sweep.slurm_job_id);
    EGM_REQUIRE(!state.active(), ConfigError,
                "sweep '{}' already has Slurm job {} ({}); two jobs would run the same cells: wait for it or "
                "`scancel {}` first",
                sweep.name, *sweep.slurm_job_id, state.state, *sweep.slurm_job_id);
  }
  // Written before sbatch runs: the error message when sbatch is missing tells the user to submit this file.
  atomic_write_file(script_path, script);
  const std::uint64_t job_id = slurm::submit_batch_script(script_path, o.sbatch);
  setup.db.set_slurm_job_id(sweep.id, std::to_string(job_id));

  if (o.parsable) {
    std::cout << job_id << "\n";
    return;
  }
  std::cout << fmt::format("submitted sweep {} ({}, {} workers) as Slurm job {}\n", sweep.name, size.product(),
                           workers, job_id);
  std::cout << fmt::format("  script  {}\n", script_path);
  std::cout << fmt::format("  log     {}\n", (db_dir / fmt::format("{}-{}.out", spec.name, job_id)).string());
  std::cout << fmt::format("  follow  egm status --db {} --sweep {}\n", db_path, sweep.name);
}

}  // namespace

void register_submit_command(CLI::App& app) {
  auto o = std::make_shared<SubmitOptions>();
  auto* cmd = app.add_subcommand("submit", "run a sweep as a Slurm job: render the batch script, sbatch it");
  launch::add_launch_flags(*cmd, o->launch);  // spec, --db, --device, ...: launch/launch_options.h
  cmd->add_flag("--slurm", o->slurm, "submit to Slurm (required: the only scheduler)");
  cmd->add_option("--workers", o->workers,
                  "worker ranks; the job has workers + 1 tasks (default: one per cell; with --gpus-per-node G at "
                  "most G x runs_per_gpu per node)")
      ->check(launch::positive_count());
  cmd->add_option("--time", o->time, "time limit per attempt (sbatch --time)")->capture_default_str();
  cmd->add_option("--partition", o->partition, "partition (sbatch --partition)");
  cmd->add_option("--account", o->account, "account (sbatch --account)");
  cmd->add_option("--gpus-per-node", o->gpus_per_node,
                  "GPUs per node, [type:]count (sbatch --gpus-per-node); the runs train on them (--device cuda) "
                  "unless --device or the spec says otherwise");
  std::string param_help = "any batch script parameter, repeatable; one of:";
  for (const auto& p : slurm::batch_parameters()) param_help += " " + p.name;
  cmd->add_option("--param", o->params, param_help)->type_name("NAME=VALUE");
  cmd->add_flag("--dry-run", o->dry_run, "print the batch script; write nothing, submit nothing");
  cmd->add_flag("--parsable", o->parsable, "print only the job id");
  cmd->add_option("--sbatch", o->sbatch, "the sbatch command")->capture_default_str();
  cmd->add_option("--max-cells", o->max_cells, "refuse a spec of more cells than this (variants x seeds x grid points)")
      ->capture_default_str()
      ->check(launch::positive_count());
  cmd->add_option("--data", o->data, "corpus file (default: $EGM_DATA, else data/tinyshakespeare/input.txt)");
  sequential::add_until_flags(*cmd, o->until);
  cmd->footer(
      "Writes DB_DIR/<sweep>.sbatch, creates the sweep in the database (nothing runs), runs sbatch and stores the "
      "job id with the sweep (egm status shows it and the job's state). The job requeues itself after the "
      "time-limit warning (slurm/README.md); submitting a stopped sweep again resumes it. With --until (or the spec's "
      "\"until\" field) the job runs egm sweep --until, which adds seeds until the claims are settled; a requeued "
      "attempt goes on from the seeds the sweep has.");
  cmd->callback([o] { run_submit(*o); });  // a copy: run_submit resolves the device into it
}

}  // namespace egm::cli
