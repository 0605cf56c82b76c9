// The Slurm job environment, read in one place. Every SLURM_* variable egm
// uses is parsed here, with a clear error when one is malformed, so the rest
// of the code asks "which attempt is this?" instead of calling getenv.
//
// Under mpirun (our default launcher) the ranks inherit the batch shell's
// per-task variables: SLURM_PROCID and SLURM_LOCALID are 0 in every rank and
// SLURM_NTASKS is the allocation's task count. Take ranks from MPI; only under
// `srun` do procid/local_id describe the task itself.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace egm::slurm {

struct SlurmEnv {
  std::optional<std::uint64_t> job_id;   // SLURM_JOB_ID (SLURM_JOBID on old Slurm); unset outside a job
  int restart_count = 0;                 // SLURM_RESTART_COUNT: 0 on the first attempt, +1 per requeue
  std::optional<int> procid;             // SLURM_PROCID: task rank within the step (srun)
  std::optional<int> local_id;           // SLURM_LOCALID: task index on this node (srun)
  std::optional<int> ntasks;             // SLURM_NTASKS: tasks in the job (or step)
  std::optional<int> nodes;              // SLURM_JOB_NUM_NODES: nodes in the allocation
  std::string nodelist;                  // SLURM_JOB_NODELIST, compressed ("gpu[01-04]")
  std::optional<int> cpus_per_task;      // SLURM_CPUS_PER_TASK: set only when requested
  std::optional<int> gpus_on_node;       // SLURM_GPUS_ON_NODE: GPUs allocated on this node
  std::string job_gpus;                  // SLURM_JOB_GPUS: their device indices ("0,1")

  bool in_job() const { return job_id.has_value(); }
  // One line for logs: "job 123 attempt 2, 5 tasks on gpu[01-02]" or "not in a Slurm job".
  std::string summary() const;
};

// Looks a variable up; std::nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// From this process's environment.
SlurmEnv read_slurm_env();
// From any lookup (tests pass a map). A set but malformed number throws
// ConfigError naming the variable and its value.
SlurmEnv read_slurm_env(const EnvLookup& lookup);

}  // namespace egm::slurm
