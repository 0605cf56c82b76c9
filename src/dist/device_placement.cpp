// A worker's local rank (the launcher's environment, else MPI's shared-memory
// split of the communicator) and the GPU it takes from it.
#include "dist/device_placement.h"

#include "mpi/check.h"

namespace egm::dist {

int node_local_rank(MPI_Comm comm) {
  int rank = 0;
  EGM_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node = MPI_COMM_NULL;
  EGM_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local = 0;
  const int rc = MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  EGM_MPI_CHECK(rc);
  return local;
}

LocalRank local_rank(MPI_Comm comm) {
  const int from_mpi = node_local_rank(comm);
  if (auto env = local_rank_from_env()) return *env;
  return {from_mpi, "MPI_COMM_TYPE_SHARED"};
}

}  // namespace egm::dist
