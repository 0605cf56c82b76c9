// NcclCommunicator: the ncclUniqueId broadcast over MPI, one NCCL communicator
// per run, ncclAllReduce over CUDA buckets; NCCL and CUDA errors as egm errors.
#include "dist/nccl_communicator.h"

#include <torch/torch.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <utility>

#include "dist/cuda_stream.h"
#include "mpi/check.h"
#include "util/error.h"

namespace egm {
namespace dist {

void check_nccl(ncclResult_t rc, const char* call, const char* file, int line) {
  if (rc == ncclSuccess) return;
  std::string message = fmt::format("{} failed: {}", call, ncclGetErrorString(rc));
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  // ncclGetLastError (NCCL 2.13+) often says more than the error code, e.g. which peer failed.
  const char* last = ncclGetLastError(nullptr);
  if (last && *last) message += fmt::format(" ({})", last);
#endif
  throw Error(message, mpi::error_location(file, line));
}

void check_cuda(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc == cudaSuccess) return;
  throw Error(fmt::format("{} failed: {} ({})", call, cudaGetErrorString(rc), cudaGetErrorName(rc)),
              mpi::error_location(file, line));
}

NcclComm::NcclComm(int nranks, const ncclUniqueId& id, int rank) {
  EGM_NCCL_CHECK(ncclCommInitRank(&comm_, nranks, id, rank));
}

NcclComm::~NcclComm() {
  if (comm_) ncclCommDestroy(comm_);
}

NcclComm::NcclComm(NcclComm&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    if (comm_) ncclCommDestroy(comm_);
    comm_ = std::exchange(other.comm_, nullptr);
  }
  return *this;
}

}  // namespace dist

namespace {

// Makes `device` current for a scope (NCCL and our kernels use the current device).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    EGM_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) EGM_CUDA_CHECK(cudaSetDevice(device));
  }
  // No check: a destructor must not throw, and the previous device was valid a moment ago.
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

ncclDataType_t nccl_type(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat: return ncclFloat32;
    case torch::kDouble: return ncclFloat64;
    case torch::kHalf: return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case torch::kBFloat16: return ncclBfloat16;
#endif
    default:
      EGM_THROW(Error, "NCCL allreduce_mean supports float32, float64, float16 and bfloat16 tensors, not {}",
                c10::toString(dtype));
  }
}

// ncclAvg (NCCL >= 2.10) divides inside the collective; older NCCL sums and we scale after.
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
constexpr bool kHasAvg = true;
constexpr ncclRedOp_t kMeanOp = ncclAvg;
#else
constexpr bool kHasAvg = false;
constexpr ncclRedOp_t kMeanOp = ncclSum;
#endif

// One fixed-size record per rank: "host|pci-bus-id", or "!problem" when this
// rank cannot use its device. Gathered by all so that all fail together.
using GpuRecord = std::array<char, 256>;

GpuRecord describe_gpu(int device) {
  GpuRecord record{};
  std::string text;
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    text = fmt::format("!cudaGetDeviceCount failed: {}", cudaGetErrorString(rc));
  } else if (device < 0 || device >= count) {
    text = fmt::format("!CUDA device {} does not exist ({} visible)", device, count);
  } else {
    char host[128] = {0};
    // The host with the PCI bus id identifies the physical GPU across ranks whatever CUDA_VISIBLE_DEVICES renumbers.
    gethostname(host, sizeof(host) - 1);
    char bus[64] = {0};
    const cudaError_t bus_rc = cudaDeviceGetPCIBusId(bus, sizeof(bus), device);
    text = bus_rc == cudaSuccess ? fmt::format("{}|{}", host, bus)
                                 : fmt::format("!cudaDeviceGetPCIBusId({}) failed: {}", device, cudaGetErrorString(bus_rc));
  }
  std::strncpy(record.data(), text.c_str(), record.size() - 1);
  return record;
}

void check_one_gpu_per_rank(MPI_Comm comm, int rank, int size, int device) {
  const GpuRecord mine = describe_gpu(device);
  std::vector<GpuRecord> all(static_cast<size_t>(size));
  // Every rank sees every record, so all refuse together instead of some hanging in ncclCommInitRank.
  EGM_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(),
                                   static_cast<int>(mine.size()), MPI_CHAR, comm));
  for (int r = 0; r < size; ++r) {
    const std::string record(all[static_cast<size_t>(r)].data());
    if (!record.empty() && record[0] == '!')
      EGM_THROW(ConfigError, "NCCL backend: rank {} of this run cannot use its GPU: {}", r, record.substr(1));
    for (int other = 0; other < r; ++other)
      EGM_REQUIRE(record != std::string(all[static_cast<size_t>(other)].data()), ConfigError,
                  "NCCL backend: ranks {} and {} of this run share the GPU {}; a data-parallel run needs one GPU "
                  "per rank (this is rank {} on device {}). Place its workers on distinct GPUs "
                  "(dist/device_placement.h)",
                  other, r, record, rank, device);
  }
}

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, int device_index, int64_t bucket_bytes)
    : mpi_(comm, bucket_bytes), device_(device_index), bucket_bytes_(bucket_bytes) {
  check_one_gpu_per_rank(mpi_.comm(), mpi_.rank(), mpi_.size(), device_);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  int id_ok = 1;
  if (mpi_.rank() == 0) id_ok = ncclGetUniqueId(&id) == ncclSuccess ? 1 : 0;
  // Everyone learns whether rank 0 got an id, so a failure there cannot leave the others waiting.
  EGM_MPI_CHECK(MPI_Bcast(&id_ok, 1, MPI_INT, 0, mpi_.comm()));
  EGM_CHECK(id_ok == 1, "NCCL backend: ncclGetUniqueId failed on rank 0 of this run");
  EGM_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, 0, mpi_.comm()));
  // ncclCommInitRank binds the communicator to the current device.
  DeviceScope scope(device_);
  nccl_ = dist::NcclComm(mpi_.size(), id, mpi_.rank());
}

void NcclCommunicator::allreduce_mean(std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  dist::for_each_bucket(tensors, bucket_bytes_, [&](const dist::Bucket& bucket, torch::Tensor& flat) {
    // CPU tensors (none in a CUDA run, but allowed) go over the MPI communicator NCCL was bootstrapped with.
    if (bucket.device.is_cpu()) {
      std::vector<torch::Tensor> one{flat};
      mpi_.allreduce_mean(one);
      return;
    }
    EGM_CHECK(bucket.device.is_cuda() && bucket.device.index() == device_,
              "NCCL backend of device cuda:{} got a tensor on {}", device_, bucket.device.str());
    const ncclDataType_t type = nccl_type(bucket.dtype);
    if (bucket.numel == 0) return;
    DeviceScope scope(device_);
    cudaStream_t stream = dist::collective_stream(device_);
    EGM_NCCL_CHECK(ncclAllReduce(flat.data_ptr(), flat.data_ptr(), static_cast<size_t>(flat.numel()), type, kMeanOp,
                                 nccl_.get(), stream));
    ++nccl_calls_;
    // On its own stream the collective must finish before torch's stream reads the result; on torch's stream it is ordered already.
    if (!dist::kUsesTorchStream) EGM_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (!kHasAvg) flat.div_(size());
  });
}

void NcclCommunicator::broadcast(torch::Tensor& tensor, int root) {
  EGM_CHECK(tensor.defined(), "broadcast of an undefined tensor");
  if (tensor.is_cpu()) {
    mpi_.broadcast(tensor, root);
    return;
  }
  EGM_CHECK(root >= 0 && root < size(), "broadcast root {} is not a rank of this {}-rank communicator", root, size());
  EGM_CHECK(tensor.is_cuda() && tensor.device().index() == device_, "NCCL backend of device cuda:{} got a tensor on {}",
            device_, tensor.device().str());
  torch::NoGradGuard no_grad;
  torch::Tensor buffer = tensor.contiguous();
  DeviceScope scope(device_);
  cudaStream_t stream = dist::collective_stream(device_);
  EGM_NCCL_CHECK(ncclBroadcast(buffer.data_ptr(), buffer.data_ptr(), buffer.nbytes(), ncclUint8, root, nccl_.get(),
                               stream));
  ++nccl_calls_;
  if (!dist::kUsesTorchStream) EGM_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (!buffer.is_same(tensor)) tensor.copy_(buffer);
}

void NcclCommunicator::barrier() { mpi_.barrier(); }

}  // namespace egm
