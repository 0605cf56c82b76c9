// The MPI backend of Communicator: the ranks of one run average their
// gradients with MPI_Allreduce over flattened buckets (one call per bucket,
// see bucketing.h), in place, then divide by the number of ranks.
//
// It works on a duplicate of the caller's communicator (MPI_COMM_WORLD in
// tests; the run's group communicator from MPI_Comm_create_group in a sweep),
// so its collectives never match the caller's messages, and sets
// MPI_ERRORS_RETURN on it so failures become egm::Error (src/mpi).
// Tensors: float32/float64 for allreduce_mean (gradients, losses), any dtype
// for broadcast. CPU tensors go to MPI directly; tensors on another device
// (CUDA without the NCCL backend) are staged through host memory.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "dist/bucketing.h"
#include "dist/communicator.h"
#include "mpi/comm.h"

namespace egm {

class MpiCommunicator : public Communicator {
 public:
  // Collective over `comm`: every rank of it constructs one, in the same order.
  explicit MpiCommunicator(MPI_Comm comm, int64_t bucket_bytes = dist::kDefaultBucketBytes);
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::mpi; }

  void allreduce_mean(std::vector<at::Tensor>& tensors) override;
  void broadcast(at::Tensor& tensor, int root) override;
  void barrier() override;

  // The duplicated communicator (NcclCommunicator bootstraps over it).
  MPI_Comm comm() const { return comm_.get(); }
  int64_t bucket_bytes() const { return bucket_bytes_; }
  // MPI_Allreduce calls made so far (tests check there is one per bucket).
  int64_t allreduce_calls() const { return allreduce_calls_; }

 private:
  void allreduce_sum_in_place(at::Tensor& flat);  // flat: 1-D contiguous, CPU

  mpi::Comm comm_;  // freed with the communicator (not after MPI_Finalize)
  int rank_ = 0;
  int size_ = 1;
  int64_t bucket_bytes_;
  int64_t allreduce_calls_ = 0;
};

}  // namespace egm
