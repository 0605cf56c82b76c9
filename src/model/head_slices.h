#pragma once
// Shared by the CPU attention kernels (causal_attention_kernels.cpp, flash_attention_kernels.cpp):
// raw float views of the per-(batch, head) matrices of a [B, H, T, X] tensor.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace egm::kernels {

// The tensor itself when its last dimension is unit-stride, else a contiguous copy.
inline at::Tensor unit_last_stride(const at::Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); }

// The (b, h) slices of a [B, H, T, X] tensor as row-major matrices with row stride `ld`.
struct Slices {
  explicit Slices(const at::Tensor& t)
      : data(t.data_ptr<float>()), heads(t.size(1)), sb(t.stride(0)), sh(t.stride(1)), ld(t.stride(2)) {}
  float* at(int64_t bh) const { return data + (bh / heads) * sb + (bh % heads) * sh; }
  float* data;
  int64_t heads, sb, sh, ld;
};

}  // namespace egm::kernels
