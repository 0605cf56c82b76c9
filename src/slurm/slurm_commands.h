// The Slurm client commands egm runs: `sbatch` to submit a sweep's batch
// script, `squeue`/`sacct` to ask what became of the job. They are run as
// child processes (no libslurm: its ABI changes with every Slurm release), with
// stdout and stderr kept apart so a failure can quote Slurm's own message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace egm::slurm {

struct ProgramRun {
  bool started = false;  // false: the program could not be executed (not found, not executable)
  int exit_code = -1;    // exit status; 128 + N when killed by signal N
  bool timed_out = false;
  std::string out, err;
};

// Runs argv[0] (looked up in PATH) with no stdin; kills it (SIGKILL) after
// timeout_s seconds. Never throws for the child's own failure, only when the
// process cannot be created at all (fork/pipe).
ProgramRun run_program(const std::vector<std::string>& argv, double timeout_s = 60);

// `sbatch SCRIPT` from the script's folder; returns the job id. Throws
// egm::Error when sbatch is missing ("is Slurm installed?"), fails (its exit
// status and stderr), or prints no job id.
std::uint64_t submit_batch_script(const std::string& script_path, const std::string& sbatch = "sbatch");

struct JobState {
  std::string state;   // "RUNNING", "PENDING", "COMPLETED", ... or "unknown (why)"
  std::string source;  // "squeue", "sacct" or "" when unknown
  bool known() const { return !source.empty(); }
  // Pending, running or on its way back (requeued, suspended): the job may
  // still start a coordinator on its sweep.
  bool active() const;
};

// The job's state: `squeue -h -t all -j ID -o %T` while the controller remembers the
// job (`-t all`: finished jobs too; plain squeue lists only pending and running),
// job, else `sacct -n -X -P -j ID -o State` (needs accounting), else
// "unknown (squeue unavailable)" / "unknown (not in squeue; sacct ...)".
JobState query_job_state(const std::string& job_id);

}  // namespace egm::slurm
