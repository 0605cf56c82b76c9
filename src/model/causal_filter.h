// Causal 1-D filtering of one scalar signal per position by a batch of FIR
// filters, the building block of the wavelet energy gates (ABLATIONS.md):
//   y[b, f, t] = sum_u kernels[f, u] * m[b, t - u],   m_t = 0 for t < 0,
// so y_t reads m_0..m_t only. One conv1d call for every filter at once.
#pragma once

#include <torch/torch.h>

namespace egm {

// m: [B, T]; kernels: [F, K] (h_f(u) for u = 0..K-1). Returns [B, F, T].
torch::Tensor causal_filter(const torch::Tensor& m, const torch::Tensor& kernels);

}  // namespace egm
