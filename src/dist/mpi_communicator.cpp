// MpiCommunicator: in-place MPI_Allreduce over each bucket, then division by
// the rank count; broadcast for the initial weights.
#include "dist/mpi_communicator.h"

#include <torch/torch.h>

#include <algorithm>
#include <climits>

#include "mpi/check.h"
#include "util/error.h"

namespace egm {
namespace {

MPI_Datatype mpi_reduce_type(torch::ScalarType dtype) {
  switch (dtype) {
    // Half types have no standard MPI datatype (MPI cannot sum them), so only these two.
    case torch::kFloat: return MPI_FLOAT;
    case torch::kDouble: return MPI_DOUBLE;
    default:
      EGM_THROW(Error, "MPI allreduce_mean supports float32 and float64 tensors, not {}", c10::toString(dtype));
  }
}

// MPI counts are int: longer buffers go in INT_MAX-element pieces.
constexpr int64_t kMaxCount = INT_MAX;

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, int64_t bucket_bytes) : bucket_bytes_(bucket_bytes) {
  EGM_CHECK(comm != MPI_COMM_NULL, "MpiCommunicator needs a communicator, got MPI_COMM_NULL");
  EGM_CHECK(bucket_bytes > 0, "bucket size must be positive, got {} bytes", bucket_bytes);
  // Errors on `comm` itself still go to its handler (fatal by default); ours return.
  // A duplicate: its collectives cannot match messages of the caller's on the same communicator.
  comm_ = mpi::Comm::duplicate(comm);
  rank_ = comm_.rank();
  size_ = comm_.size();
}

void MpiCommunicator::allreduce_sum_in_place(torch::Tensor& flat) {
  const MPI_Datatype type = mpi_reduce_type(flat.scalar_type());
  char* data = static_cast<char*>(flat.data_ptr());
  const auto element = static_cast<int64_t>(flat.element_size());
  // Each piece is its own collective: every rank takes the same pieces, since all have the same numel.
  for (int64_t done = 0; done < flat.numel();) {
    const int64_t count = std::min(kMaxCount, flat.numel() - done);
    EGM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done * element, static_cast<int>(count), type, MPI_SUM, comm_.get()));
    ++allreduce_calls_;
    done += count;
  }
}

void MpiCommunicator::allreduce_mean(std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  dist::for_each_bucket(tensors, bucket_bytes_, [&](const dist::Bucket& bucket, torch::Tensor& flat) {
    mpi_reduce_type(bucket.dtype);  // refuse other dtypes on every rank before any call
    if (bucket.numel == 0) return;
    // A CUDA bucket is staged through host memory: MPI need not be CUDA-aware.
    if (flat.is_cpu()) {
      allreduce_sum_in_place(flat);
      flat.div_(size_);
    } else {
      torch::Tensor host = flat.to(torch::kCPU);
      allreduce_sum_in_place(host);
      host.div_(size_);
      // Assigned, not copied: unflatten_into copies the new tensor into the gradients.
      flat = host.to(flat.device());
    }
  });
}

void MpiCommunicator::broadcast(torch::Tensor& tensor, int root) {
  EGM_CHECK(tensor.defined(), "broadcast of an undefined tensor");
  EGM_CHECK(root >= 0 && root < size_, "broadcast root {} is not a rank of this {}-rank communicator", root, size_);
  torch::NoGradGuard no_grad;
  // As bytes (MPI_BYTE): any dtype broadcasts, since nothing is reduced.
  torch::Tensor host = tensor.is_cpu() ? tensor.contiguous() : tensor.to(torch::kCPU).contiguous();
  char* data = static_cast<char*>(host.data_ptr());
  const auto bytes = static_cast<int64_t>(host.nbytes());
  for (int64_t done = 0; done < bytes;) {
    const int64_t count = std::min(kMaxCount, bytes - done);
    EGM_MPI_CHECK(MPI_Bcast(data + done, static_cast<int>(count), MPI_BYTE, root, comm_.get()));
    done += count;
  }
  if (!host.is_same(tensor)) tensor.copy_(host);
}

void MpiCommunicator::barrier() { EGM_MPI_CHECK(MPI_Barrier(comm_.get())); }

}  // namespace egm
