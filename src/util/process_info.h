// Facts about this process that errors, logs and run records carry.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace egm {

struct ProcessInfo {
  std::string host;
  int rank = -1;        // MPI world rank, -1 outside MPI
  int local_rank = -1;  // rank on this node, from local_rank_from_env(); -1 when unset or not a rank
};

// The local rank as the launcher tells it: OMPI_COMM_WORLD_LOCAL_RANK (Open
// MPI's mpirun), else MPI_LOCALRANKID (MPICH, Intel MPI), else SLURM_LOCALID
// (srun); nullopt when none is set. The one reader of these variables.
struct LocalRank {
  int rank = -1;
  std::string source;  // the variable it came from (or "MPI_COMM_TYPE_SHARED": dist/device_placement.h)
};
// From an environment (a map in tests). A value that is not a non-negative
// integer is a ConfigError naming the variable.
std::optional<LocalRank> local_rank_from_env(const std::map<std::string, std::string>& env);
// The same from this process's environment.
std::optional<LocalRank> local_rank_from_env();

// Read once from the environment; mpi::Scope updates rank when MPI starts.
const ProcessInfo& process_info();
void set_process_rank(int rank);

// Reads an environment variable; empty when unset.
std::string env_or(const char* name, const std::string& fallback = "");

}  // namespace egm
