// RoPE's cos and sin tables for T positions and their rotation of q and k.
#include "model/rotary.h"

#include <cmath>

namespace egm {

std::pair<torch::Tensor, torch::Tensor> rope_tables(int64_t T, int64_t head_size, const torch::Device& device) {
  // Angles in float64: at long T, t * theta in float32 loses the low bits the rotation depends on.
  auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor i = torch::arange(head_size / 2, opts);
  torch::Tensor theta = torch::pow(10000.0, -2.0 * i / static_cast<double>(head_size));  // [head/2]
  torch::Tensor angle = torch::arange(T, opts).unsqueeze(1) * theta.unsqueeze(0);       // [T, head/2]
  return {angle.cos().to(device, torch::kFloat32), angle.sin().to(device, torch::kFloat32)};
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const auto sizes = x.sizes();
  // Adjacent elements form a pair (RoFormer's and GPT-J's layout, not GPT-NeoX's halves): the head size must be even.
  torch::Tensor pairs = x.reshape({sizes[0], sizes[1], sizes[2], sizes[3] / 2, 2});  // [B,H,T,head/2,2]
  torch::Tensor even = pairs.select(-1, 0);
  torch::Tensor odd = pairs.select(-1, 1);
  // The tables are float32; cast to the activations' dtype (bf16 under autocast) so the ops do not promote.
  torch::Tensor c = cos.to(x.scalar_type());
  torch::Tensor s = sin.to(x.scalar_type());
  torch::Tensor rotated = torch::stack({even * c - odd * s, even * s + odd * c}, -1);
  return rotated.reshape(sizes);
}

}  // namespace egm
