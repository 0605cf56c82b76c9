// The command that starts a sweep's ranks: the one mpirun line that `egm
// sweep` execs on its own host and that `egm submit` writes into the batch
// script. Built here, without LibTorch, so `egm submit` (the torch-free `egm`)
// calls it directly instead of running the sweep verb; the choice of how
// mpirun starts the ranks (with or without a remote agent such as ssh) is
// made here too, once, for both.
//
//   mpirun -q --oversubscribe --bind-to none -x OMP_NUM_THREADS=T -x OPENBLAS_NUM_THREADS=T
//          [--mca plm isolated] [LAUNCHER ARGS]
//          -np 1 BIN/egm-coordinator SPEC [launch flags] --view VIEW : -np N BIN/egm-worker --data CORPUS
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "launch/launch_options.h"

namespace egm::launch {

// Where the ranks start, which decides how mpirun starts them.
enum class RankHosts {
  // This host only, outside any scheduler: Open MPI's `isolated` launcher,
  // which forks every rank itself and needs no remote agent. Its default one
  // (rsh) looks for ssh or rsh first and aborts (exit 243) when neither is on
  // the PATH, even for a job whose ranks are all local: containers, the lent
  // GPU machine. Launcher arguments that name hosts (--host, --hostfile) keep
  // the default launcher, which reaches them.
  this_host,
  // Inside a Slurm allocation (egm submit's batch job, an salloc shell):
  // mpirun asks Slurm (srun) to start its daemons, on one node or several.
  slurm_job,
};

struct SweepLaunch {
  LaunchOptions options;         // passed on to egm-coordinator (spec, db, runs dir made absolute)
  int workers = 1;               // egm-worker ranks
  int largest_cell_ranks = 1;    // the most workers one cell takes at once (data_parallel)
  std::string data;              // the corpus every worker reads
  std::string view = "plain";    // the coordinator's live view (tty, plain, none)
  std::string mpirun = "mpirun";
  std::string mpirun_args;       // extra launcher arguments, split as a shell would
  std::filesystem::path bin_dir; // holds egm-coordinator and egm-worker
  RankHosts hosts = RankHosts::this_host;
};

// ConfigError unless `workers` can hold the largest cell (data_parallel ranks);
// sweep_launch_command checks it too, callers check it first to refuse before
// anything else (the corpus) is looked at.
void require_enough_workers(int workers, int largest_cell_ranks, const std::string& spec_path);

// The command's words. ConfigError for fewer workers than a cell needs and
// for unbalanced quotes in mpirun_args; IoError when bin_dir lacks the
// coordinator or the worker. options.db_path must be set (db::default_db_path()).
std::vector<std::string> sweep_launch_command(const SweepLaunch& launch);

// The `egm sweep` command that makes this launch itself, for a batch job whose
// sweep is more than one launch (--until: launch, look, launch again):
//   BIN/egm sweep SPEC [launch flags] --workers N --data CORPUS --view VIEW
//                [--mpirun M] [--mpirun-args A] EXTRA...
// Paths are made absolute as in sweep_launch_command; IoError when bin_dir
// lacks egm. That egm sweep builds sweep_launch_command's line in the job.
std::vector<std::string> sweep_verb_command(const SweepLaunch& launch, const std::vector<std::string>& extra);

// The words as one line for a POSIX shell (each quoted where needed).
std::string shell_command_line(const std::vector<std::string>& words);

// Splits "--mca btl self,vader -x 'A=b c'" like a shell would (quotes, no expansion).
std::vector<std::string> split_launcher_args(const std::string& text);

// True when launcher arguments place ranks on named hosts (--host, -H, --hostfile, ...).
bool names_hosts(const std::vector<std::string>& launcher_args);

// The folder of the running binary (/proc/self/exe): egm, egm-torch, egm-coordinator
// and egm-worker are built side by side.
std::filesystem::path own_binary_dir();

}  // namespace egm::launch
