// Which GPU a worker uses. A worker knows its rank on its node (its local
// rank) from the launcher: OMPI_COMM_WORLD_LOCAL_RANK under Open MPI's
// mpirun, SLURM_LOCALID under srun; failing both, from MPI itself (its index
// among the ranks of the communicator that share its node).
//
// GPUs are dealt round-robin: local rank r gets device r % G (G = visible
// GPUs), and is the (r / G)-th run packed on it. With runs_per_gpu = p a node
// holds at most G*p workers. Round-robin rather than blocks (r / p) because
// a data-parallel run takes consecutive workers and NCCL needs its ranks on
// distinct GPUs: consecutive local ranks land on distinct GPUs whenever
// k <= G, whatever p is. Callers whose node also hosts a non-GPU rank (the
// sweep's coordinator) pass the worker's index among the node's workers.
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

struct GpuPlacement {
  int device = 0;  // CUDA device index (as numbered under CUDA_VISIBLE_DEVICES)
  int slot = 0;    // which of the runs packed on that GPU this is, 0-based
};

// Round-robin placement (see above). ConfigError when visible_gpus < 1,
// runs_per_gpu < 1, local_rank < 0, or local_rank >= visible_gpus * runs_per_gpu
// (more workers on the node than the packing allows).
GpuPlacement place_on_gpu(int local_rank, int visible_gpus, int runs_per_gpu);

}  // namespace egm::dist
