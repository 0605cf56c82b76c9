// causal_filter: each position's value filtered by FIR kernels over its past only
// (a left-padded conv1d).
#include "model/causal_filter.h"

namespace egm {

torch::Tensor causal_filter(const torch::Tensor& m, const torch::Tensor& kernels) {
  const int64_t K = kernels.size(1);
  // Left padding by K-1 zeros: output t sees inputs t-K+1..t (m_t = 0 before the window).
  torch::Tensor padded = torch::constant_pad_nd(m.unsqueeze(1), {K - 1, 0});  // [B, 1, T+K-1]
  // conv1d is a cross-correlation, y_t = sum_k w_k padded_{t+k}; with w_k = h(K-1-k)
  // it becomes the convolution sum_u h(u) m_{t-u}.
  torch::Tensor weight = kernels.flip({-1}).unsqueeze(1).to(m.scalar_type());  // [F, 1, K]
  return torch::conv1d(padded, weight);                                         // [B, F, T]
}

}  // namespace egm
