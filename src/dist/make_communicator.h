// Picks the backend for a run's ranks from its device: NCCL for CUDA devices
// when this build has it (EGM_HAVE_NCCL), MPI otherwise (CUDA tensors are
// then staged through host memory). Collective over `comm`.
//
// A 1-rank run needs no communicator at all: pass none to the Trainer (its
// LocalCommunicator reports backend "none"). make_communicator still works
// for one rank, and then reports "mpi" or "nccl".
#pragma once

#include <mpi.h>

#include <memory>

#include "dist/bucketing.h"
#include "dist/communicator.h"

namespace egm {

// Whether this build has the NCCL backend (a function, so that only egm_dist
// is compiled differently with and without NCCL).
bool have_nccl();

// The backend make_communicator picks for `device` ("nccl" or "mpi"), without making it.
std::string backend_for(const at::Device& device);

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const at::Device& device,
                                                int64_t bucket_bytes = dist::kDefaultBucketBytes);

}  // namespace egm
