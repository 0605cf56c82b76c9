// A worker's local rank (the launcher's environment, else MPI's shared-memory
// split of the communicator) and the GPU it takes from it.
#include "dist/device_placement.h"

#include "mpi/check.h"

namespace egm::dist {

int node_local_rank(MPI_Comm comm) {
  int rank = 0;
  EGM_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node = MPI_COMM_NULL;
  // The ranks that share memory (one node); keyed by rank so local ranks follow the global order.
  EGM_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local = 0;
  const int rc = MPI_Comm_rank(node, &local);
  // Freed before the check, so a failing MPI_Comm_rank does not leak the communicator.
  MPI_Comm_free(&node);
  EGM_MPI_CHECK(rc);
  return local;
}

LocalRank local_rank(MPI_Comm comm) {
  // Called on every rank, even when the environment answers: the split is collective, and a rank that
  // skipped it would leave the others waiting.
  const int from_mpi = node_local_rank(comm);
  // The launcher's own numbering wins when it sets one (Open MPI, MPICH, Slurm).
  if (auto env = local_rank_from_env()) return *env;
  return {from_mpi, "MPI_COMM_TYPE_SHARED"};
}

}  // namespace egm::dist
