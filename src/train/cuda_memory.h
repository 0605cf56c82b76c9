// Peak GPU memory of this process, from LibTorch's caching allocator, and the
// current device, when egm is built against a CUDA LibTorch (c10_cuda); nothing otherwise.
#pragma once

#include <optional>
#include <string>

namespace egm {

// Resets the peak counter of CUDA device `index`, so the next reading covers only what follows.
void reset_peak_cuda_memory(int index);
// Peak bytes allocated on CUDA device `index` since the last reset, in MB; nullopt without CUDA.
std::optional<double> peak_cuda_memory_mb(int index);
// Total memory of CUDA device `index` in MB; nullopt without CUDA or without that device.
std::optional<double> cuda_device_memory_mb(int index);
// Makes CUDA device `index` this thread's current device (c10::cuda::set_device), so
// what runs without an explicit device (a context, cuBLAS handles, NCCL, graphs) lands
// on it, not on GPU 0. Nothing without CUDA.
void make_cuda_device_current(int index);
// The name of CUDA device `index` ("NVIDIA H200"); nullopt without CUDA or without that device.
std::optional<std::string> cuda_device_name(int index);

}  // namespace egm
