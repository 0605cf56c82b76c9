// The CUDA stream the NCCL backend enqueues its collectives on. Private to
// nccl_communicator.cpp; the one place egm_dist touches LibTorch's CUDA API.
//
// With a CUDA LibTorch (a PyTorch wheel: CMake target c10_cuda, and then
// EGM_TORCH_HAS_CUDA) it is torch's current stream on the device, so the
// collective is ordered after the backward kernels that produced the
// gradients and before the optimiser kernels that read them, with no host
// synchronisation. Debian's LibTorch is CPU-only (it ships c10/cuda headers
// but no libc10_cuda), so there the backend uses the legacy default stream
// (0) and synchronises it after each collective: slower, but correct whatever
// stream the tensors were produced on, and such a build cannot make CUDA
// tensors anyway (it only has to compile and link).
#pragma once

#include <cuda_runtime_api.h>

#if defined(EGM_TORCH_HAS_CUDA)
#include <c10/cuda/CUDAStream.h>
#endif

namespace egm::dist {

#if defined(EGM_TORCH_HAS_CUDA)
inline constexpr bool kUsesTorchStream = true;
inline cudaStream_t collective_stream(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}
#else
inline constexpr bool kUsesTorchStream = false;
inline cudaStream_t collective_stream(int /*device*/) { return nullptr; }  // the legacy default stream
#endif

}  // namespace egm::dist
