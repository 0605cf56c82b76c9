#include "dist/make_communicator.h"

#include <torch/torch.h>

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

std::string backend_for(const torch::Device& device) { return device.is_cuda() && have_nccl() ? "nccl" : "mpi"; }

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const torch::Device& device, int64_t bucket_bytes) {
#if defined(EGM_HAVE_NCCL)
  // "cuda" without an index is device 0, as parse_device and torch read it.
  if (device.is_cuda()) return std::make_unique<NcclCommunicator>(comm, device.has_index() ? device.index() : 0, bucket_bytes);
#endif
  return std::make_unique<MpiCommunicator>(comm, bucket_bytes);
}

}  // namespace egm
