// Every LibTorch call whose spelling differs between Debian's 1.13 (CPU) and
// the 2.x inside PyTorch wheels (CUDA) lives here and nowhere else.
// Header-only: include it only from targets that link egm::torch.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cstdint>
#include <string>

namespace egm::compat {

inline constexpr bool kTorch2 = TORCH_VERSION_MAJOR >= 2;

inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// A fresh CPU generator with a fixed seed (for per-parameter initialisation).
inline at::Generator make_cpu_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

// The default generator of a device: dropout draws from it.
inline at::Generator default_generator(const torch::Device& device) {
  return at::globalContext().defaultGenerator(device);
}

// Autocast on `device` (CUDA, or CPU where LibTorch autocasts bf16) with the
// given dtype (bf16/fp16); a no-op when disabled. Restores the previous state.
class AutocastGuard {
 public:
  AutocastGuard(bool enabled, at::DeviceType device, at::ScalarType dtype) : enabled_(enabled), device_(device) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    was_enabled_ = at::autocast::is_autocast_enabled(device_);
    was_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_enabled(device_, true);
    at::autocast::set_autocast_dtype(device_, dtype);
#else
    if (device_ == at::kCPU) {
      was_enabled_ = at::autocast::is_cpu_enabled();
      was_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(dtype);
    } else {
      was_enabled_ = at::autocast::is_enabled();
      was_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(dtype);
    }
#endif
  }
  ~AutocastGuard() {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, was_dtype_);
#else
    if (device_ == at::kCPU) {
      at::autocast::set_cpu_enabled(was_enabled_);
      at::autocast::set_autocast_cpu_dtype(was_dtype_);
    } else {
      at::autocast::set_enabled(was_enabled_);
      at::autocast::set_autocast_gpu_dtype(was_dtype_);
    }
#endif
    if (!was_enabled_) at::autocast::clear_cache();
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  at::DeviceType device_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

// Inside its scope no op autocasts, on any device: for the computations that
// must stay in fp32 under mixed precision (EGA's energies, z-scores and gate).
class NoAutocast {
 public:
  NoAutocast() : guard_(c10::autocast_dispatch_keyset) {}

 private:
  c10::impl::ExcludeDispatchKeyGuard guard_;
};

}  // namespace egm::compat
