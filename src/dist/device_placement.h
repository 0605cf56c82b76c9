// Which local rank a worker has: the launcher tells it (OMPI_COMM_WORLD_LOCAL_RANK
// under Open MPI's mpirun, SLURM_LOCALID under srun); failing both, MPI itself
// (its index among the ranks of the communicator that share its node). Which
// GPU a local rank gets is arithmetic without MPI or LibTorch:
// launch/gpu_placement.h.
#pragma once

#include <mpi.h>

#include <map>
#include <optional>
#include <string>

namespace egm::dist {

struct LocalRank {
  int rank = -1;
  std::string source;  // the variable it came from, or "MPI_COMM_TYPE_SHARED"
};

// From an environment (a map in tests): OMPI_COMM_WORLD_LOCAL_RANK, else
// SLURM_LOCALID; nullopt when neither is set. A value that is not a
// non-negative integer is a ConfigError naming the variable.
std::optional<LocalRank> local_rank_from_env(const std::map<std::string, std::string>& env);
// The same from this process's environment.
std::optional<LocalRank> local_rank_from_env();

// This rank's index among the ranks of `comm` on its node (MPI_Comm_split_type
// with MPI_COMM_TYPE_SHARED, ordered by rank in `comm`). Collective over comm.
int node_local_rank(MPI_Comm comm);

// The environment's answer, else node_local_rank(comm). Collective over
// `comm` either way (the split always runs), so ranks that see different
// environments cannot deadlock.
LocalRank local_rank(MPI_Comm comm);

}  // namespace egm::dist
