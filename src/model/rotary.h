// Rotary position embedding (RoPE, base 10000) on q and k: within each head,
// interleaved pairs (2i, 2i+1) rotate by angle p * 10000^(-2i/head).
#pragma once

#include <torch/torch.h>

namespace egm {

// cos and sin tables, each [T, head/2].
std::pair<torch::Tensor, torch::Tensor> rope_tables(int64_t T, int64_t head_size, const torch::Device& device);

// x: [B, H, T, head]; returns x rotated pairwise by the tables.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

}  // namespace egm
