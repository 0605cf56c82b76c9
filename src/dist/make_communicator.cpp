// The Communicator of a run's ranks: NCCL for CUDA when built with it, MPI
// otherwise, as backend_for decides.
#include "dist/make_communicator.h"

#include <torch/torch.h>

#include <algorithm>

#include "util/error.h"

#include "dist/mpi_communicator.h"
#if defined(EGM_HAVE_NCCL)
#include "dist/nccl_communicator.h"
#endif

namespace egm {

bool have_nccl() {
#if defined(EGM_HAVE_NCCL)
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const torch::Device& device, int64_t bucket_bytes) {
  // The one backend rule (run/device.h). Every rank of the group runs this
  // build, so "NCCL on every rank" is this build's fact; a group of one that
  // asks for a communicator anyway gets what a group of several would.
  int size = 1;
  // Unchecked: the size only feeds the backend rule, which is given at least 2 below.
  MPI_Comm_size(comm, &size);
  const DeviceName name{device.is_cuda() ? DeviceName::Kind::cuda : DeviceName::Kind::cpu,
                        device.has_index() ? device.index() : -1};
  const Backend backend = backend_for(name, std::max(size, 2), have_nccl());
#if defined(EGM_HAVE_NCCL)
  // "cuda" without an index is device 0, as torch_device and torch read it.
  if (backend == Backend::nccl)
    return std::make_unique<NcclCommunicator>(comm, device.has_index() ? device.index() : 0, bucket_bytes);
#endif
  // backend_for never answers none for a size of at least 2, so anything but MPI here is a bug.
  EGM_CHECK(backend == Backend::mpi, "no {} backend in this build", to_string(backend));
  return std::make_unique<MpiCommunicator>(comm, bucket_bytes);
}

}  // namespace egm
