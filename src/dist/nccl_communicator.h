// The NCCL backend of Communicator (built only when EGM_HAVE_NCCL): the ranks
// of one run, one GPU each, average gradients with ncclAllReduce over
// flattened CUDA buckets (bucketing.h) on the current stream (cuda_stream.h).
//
// MPI bootstraps it: rank 0 makes an ncclUniqueId, MPI broadcasts it over a
// duplicate of the caller's communicator, every rank joins with
// ncclCommInitRank. MPI also carries what NCCL does not: CPU tensors (the
// evaluation's loss sums) and the barrier. Before joining, the ranks check
// over MPI that no two of them share a GPU, which NCCL refuses with a less
// helpful message.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdint>

#include "dist/bucketing.h"
#include "dist/communicator.h"
#include "dist/mpi_communicator.h"

namespace egm {

namespace dist {
// Throw egm::Error "<call> failed: <ncclGetErrorString> (<last error>)" / "<cudaGetErrorString>".
void check_nccl(ncclResult_t rc, const char* call, const char* file, int line);
void check_cuda(cudaError_t rc, const char* call, const char* file, int line);

// Owns one ncclComm_t: destroyed with the object, never copied.
class NcclComm {
 public:
  NcclComm() = default;
  NcclComm(int nranks, const ncclUniqueId& id, int rank);  // ncclCommInitRank (collective)
  ~NcclComm();
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
};
}  // namespace dist

class NcclCommunicator : public Communicator {
 public:
  // Collective over `comm`. `device_index`: this rank's CUDA device (see
  // device_placement.h); it must differ from every other rank's on the host.
  NcclCommunicator(MPI_Comm comm, int device_index, int64_t bucket_bytes = dist::kDefaultBucketBytes);
  ~NcclCommunicator() override = default;

  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  Backend backend() const override { return Backend::nccl; }

  // CUDA tensors (float32/float64/float16/bfloat16) over NCCL, CPU ones over MPI.
  void allreduce_mean(std::vector<at::Tensor>& tensors) override;
  void broadcast(at::Tensor& tensor, int root) override;
  void barrier() override;  // MPI_Barrier (host-side: it does not wait for queued GPU work)

  int device_index() const { return device_; }
  int64_t nccl_calls() const { return nccl_calls_; }  // collectives issued on NCCL so far

 private:
  MpiCommunicator mpi_;
  int device_;
  int64_t bucket_bytes_;
  dist::NcclComm nccl_;
  int64_t nccl_calls_ = 0;
};

}  // namespace egm

#define EGM_NCCL_CHECK(call) ::egm::dist::check_nccl((call), #call, __FILE__, __LINE__)
#define EGM_CUDA_CHECK(call) ::egm::dist::check_cuda((call), #call, __FILE__, __LINE__)
