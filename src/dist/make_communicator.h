// Builds the communicator of a run's ranks, with the backend the one rule
// (run/device.h backend_for) gives for its device and this build: NCCL for
// CUDA devices when this build has it (EGM_HAVE_NCCL), MPI otherwise (CUDA
// tensors are then staged through host memory). Collective over `comm`.
//
// A 1-rank run needs no communicator at all: pass none to the Trainer (its
// LocalCommunicator reports Backend::none). make_communicator still works
// for one rank, and then reports mpi or nccl.
#pragma once

#include <mpi.h>

#include <memory>

#include "dist/bucketing.h"
#include "dist/communicator.h"

namespace egm {

// Whether this build has the NCCL backend (a function, so that only egm_dist
// is compiled differently with and without NCCL).
bool have_nccl();

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const at::Device& device,
                                                int64_t bucket_bytes = dist::kDefaultBucketBytes);

}  // namespace egm
