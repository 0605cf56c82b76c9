// Which local rank a worker has: the launcher tells it (egm::local_rank_from_env,
// util/process_info.h: OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID); failing that, MPI itself
// (its index among the ranks of the communicator that share its node). Which
// GPU a local rank gets is arithmetic without MPI or LibTorch:
// launch/gpu_placement.h.
#pragma once

#include <mpi.h>

#include "util/process_info.h"

namespace egm::dist {

// This rank's index among the ranks of `comm` on its node (MPI_Comm_split_type
// with MPI_COMM_TYPE_SHARED, ordered by rank in `comm`). Collective over comm.
int node_local_rank(MPI_Comm comm);

// The environment's answer (egm::local_rank_from_env), else node_local_rank(comm). Collective over
// `comm` either way (the split always runs), so ranks that see different
// environments cannot deadlock.
LocalRank local_rank(MPI_Comm comm);

}  // namespace egm::dist
