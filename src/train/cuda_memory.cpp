// The GPU's peak and total memory and its name, asked of c10_cuda when this
// build links it; nullopt on a CPU-only LibTorch.
#include "train/cuda_memory.h"

#ifdef EGM_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace egm {

#ifdef EGM_TORCH_HAS_CUDA
namespace alloc = c10::cuda::CUDACachingAllocator;

void reset_peak_cuda_memory(int index) { alloc::resetPeakStats(static_cast<c10::DeviceIndex>(index)); }

std::optional<double> peak_cuda_memory_mb(int index) {
  const auto stats = alloc::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  // Allocated, not reserved: the tensors' own peak, without the caching allocator's spare blocks.
  const auto& all = stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  return static_cast<double>(all.peak) / (1024.0 * 1024.0);
}

std::optional<double> cuda_device_memory_mb(int index) {
  // Checked first, so a bad index never leaves an error behind for the next cudaGetLastError.
  if (index < 0 || index >= static_cast<int>(c10::cuda::device_count())) return std::nullopt;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return std::nullopt;
  return static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0);
}

void make_cuda_device_current(int index) { c10::cuda::set_device(static_cast<c10::DeviceIndex>(index)); }

std::optional<std::string> cuda_device_name(int index) {
  if (index < 0 || index >= static_cast<int>(c10::cuda::device_count())) return std::nullopt;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return std::nullopt;
  return std::string(prop.name);
}
#else
void reset_peak_cuda_memory(int) {}
std::optional<double> peak_cuda_memory_mb(int) { return std::nullopt; }
std::optional<double> cuda_device_memory_mb(int) { return std::nullopt; }
void make_cuda_device_current(int) {}
std::optional<std::string> cuda_device_name(int) { return std::nullopt; }
#endif

}  // namespace egm
