// The NCCL backend is compiled and linked by every build that finds NCCL (CI
// here: a CUDA 13 toolkit with NCCL but no GPU), so it cannot rot unseen. What
// can run without a GPU does: the library's version is the header's, the
// check macros carry NCCL's and CUDA's own text, and asking for the NCCL
// communicator without usable GPUs fails on every rank alike (no rank left
// hanging). The collectives themselves need a GPU per rank and a CUDA
// LibTorch; without them those tests skip and say why. Run under mpirun -np 2.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include "dist/make_communicator.h"
#include "dist/nccl_communicator.h"
#include "util/error.h"
#include "mpi_world.h"

namespace {

using egm::test::world_rank;
using egm::test::world_size;

// Visible GPUs, 0 when the CUDA runtime finds none (and why, in `why`).
int gpu_count(std::string* why = nullptr) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    if (why) *why = cudaGetErrorString(rc);
    return 0;
  }
  if (why) *why = std::to_string(count) + " visible";
  return count;
}

TEST(NcclLink, TheLinkedLibraryIsTheHeadersVersion) {
  EXPECT_TRUE(egm::have_nccl());  // this test is built only with EGM_HAVE_NCCL
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  std::string why;
  const int gpus = gpu_count(&why);
  if (world_rank() == 0)
    std::cout << "NCCL " << version << " linked; CUDA runtime: " << gpus << " GPU(s) (" << why << ")\n";
}

TEST(NcclLink, CheckMacrosCarryTheLibrariesOwnText) {
  EXPECT_NO_THROW(EGM_NCCL_CHECK(ncclSuccess));
  EXPECT_NO_THROW(EGM_CUDA_CHECK(cudaSuccess));
  try {
    egm::dist::check_nccl(ncclInvalidArgument, "ncclAllReduce(buf)", __FILE__, __LINE__);
    ADD_FAILURE() << "no throw";
  } catch (const egm::Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("ncclAllReduce(buf) failed: ") +
                                         ncclGetErrorString(ncclInvalidArgument)),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.where().find("tests/dist/test_nccl_link.cpp:"), std::string::npos) << e.where();
    EXPECT_NE(e.where().find("(rank " + std::to_string(world_rank()) + ")"), std::string::npos) << e.where();
  }
  try {
    egm::dist::check_cuda(cudaErrorInvalidValue, "cudaMemcpy(a, b)", __FILE__, __LINE__);
    ADD_FAILURE() << "no throw";
  } catch (const egm::Error& e) {
    EXPECT_NE(std::string(e.what()).find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cudaErrorInvalidValue"), std::string::npos) << e.what();
  }
}

TEST(NcclLink, WithoutAGpuPerRankEveryRankFailsAlikeWithAClearMessage) {
  std::string why;
  const int gpus = gpu_count(&why);
  if (gpus >= world_size()) GTEST_SKIP() << "every rank has a GPU here (" << why << "); see NcclOnGpus";
  // No GPU: every rank's device is missing. One GPU: both ranks would share it.
  const int device = gpus == 0 ? world_rank() : 0;
  const std::string expected = gpus == 0 ? "cannot use its GPU" : "share the GPU";
  EXPECT_EQ(egm::backend_for(egm::DeviceName{egm::DeviceName::Kind::cuda, device}, 2, egm::have_nccl()),
            egm::Backend::nccl);
  try {
    egm::make_communicator(MPI_COMM_WORLD, torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device)));
    ADD_FAILURE() << "an NCCL communicator was made without a GPU per rank";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  MPI_Barrier(MPI_COMM_WORLD);  // reached by every rank: nobody hangs in the bootstrap
  if (world_rank() == 0)
    std::cout << "no GPU per rank here (" << why << "): the NCCL backend is compiled and linked; "
              << "its collectives are not run (NcclOnGpus skips)\n";
}

// Rank r holds 100 r + i/4 at element i: the mean over n ranks is exactly 100 (n-1)/2 + i/4.
torch::Tensor filled(int rank, int64_t n, torch::Dtype dtype, const torch::Device& device) {
  return (torch::arange(n, torch::kDouble) / 4.0 + 100.0 * rank).to(dtype).to(device);
}

TEST(NcclOnGpus, AllreduceMeanAndBroadcastOnCudaTensors) {
  std::string why;
  const int gpus = gpu_count(&why);
  if (gpus < world_size())
    GTEST_SKIP() << "needs one GPU per rank (" << world_size() << "); CUDA runtime says: " << why;
  if (!torch::cuda::is_available()) GTEST_SKIP() << "this LibTorch has no CUDA (Debian's is CPU-only)";
  const int rank = world_rank(), n = world_size();
  const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(rank));
  auto comm = egm::make_communicator(MPI_COMM_WORLD, device, /*bucket_bytes=*/64);
  ASSERT_EQ(comm->backend(), egm::Backend::nccl);
  auto* nccl = dynamic_cast<egm::NcclCommunicator*>(comm.get());
  ASSERT_NE(nccl, nullptr);

  // 64-byte buckets: f32[10] (40 B) + f32[3] (12 B) = 52 B; f32[20] (80 B) alone; f64[4] on CUDA;
  // the CPU f64[2] goes over MPI. So 3 NCCL calls.
  std::vector<torch::Tensor> t{filled(rank, 10, torch::kFloat, device), filled(rank, 3, torch::kFloat, device),
                               filled(rank, 20, torch::kFloat, device), filled(rank, 4, torch::kDouble, device),
                               filled(rank, 2, torch::kDouble, torch::kCPU)};
  comm->allreduce_mean(t);
  EXPECT_EQ(nccl->nccl_calls(), 3);
  for (const auto& x : t) {
    torch::Tensor got = x.to(torch::kCPU).to(torch::kDouble);
    torch::Tensor expected = torch::arange(x.numel(), torch::kDouble) / 4.0 + 100.0 * (n - 1) / 2.0;
    EXPECT_TRUE(torch::equal(got, expected)) << got;
  }
  torch::Tensor ids = torch::full({5}, static_cast<int64_t>(rank), torch::kLong).to(device);
  comm->broadcast(ids, n - 1);
  EXPECT_TRUE(torch::equal(ids.to(torch::kCPU), torch::full({5}, static_cast<int64_t>(n - 1), torch::kLong)));
  comm->barrier();
}

}  // namespace
