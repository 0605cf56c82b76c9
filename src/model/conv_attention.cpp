#include "model/ablation_attention.h"

namespace egm {

ConvAttentionImpl::ConvAttentionImpl(const ModelConfig& config, int64_t layer)
    : AttentionImpl(config, layer), max_lag_(config.conv_max_lag) {
  lag_weight = register_parameter("lag_weight", torch::zeros({config.n_head, 2 * max_lag_ + 1}));
  reset_parameters();
}

void ConvAttentionImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  lag_weight.zero_();
  lag_weight.select(1, max_lag_).fill_(1.0);  // w_{h,0} = 1: starts as standard attention
}

void ConvAttentionImpl::report_params(LearnedParams& out) const {
  torch::Tensor w = lag_weight.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  const int64_t n_lags = w.size(1);  // index = head * (2L+1) + (lag + L)
  for (int64_t h = 0; h < w.size(0); ++h)
    for (int64_t l = 0; l < n_lags; ++l)
      out.push_back({"conv", layer_, h * n_lags + l, "lag_weight", w[h][l].item<double>()});
}

torch::Tensor ConvAttentionImpl::lagged_scores(const torch::Tensor& P) const {
  const int64_t T = P.size(-1), L = max_lag_;
  torch::Tensor w = lag_weight.to(P.scalar_type());
  auto w_at = [&](int64_t lag) { return w.select(1, lag + L).reshape({1, -1, 1, 1}); };  // [1, H, 1, 1]
  // Shifted copies of P accumulate into one [B, H, T, T] tensor; a shift past
  // either end of the key axis contributes 0 (those columns are not touched).
  torch::Tensor s = P * w_at(0);
  for (int64_t l = 1; l <= L && l < T; ++l) {
    s.narrow(-1, 0, T - l).addcmul_(P.narrow(-1, l, T - l), w_at(l));   // s_ij += w_l  P_{i,j+l}
    s.narrow(-1, l, T - l).addcmul_(P.narrow(-1, 0, T - l), w_at(-l));  // s_ij += w_-l P_{i,j-l}
  }
  return s;
}

torch::Tensor ConvAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  Heads h = project(x, ctx);
  const int64_t T = x.size(1);
  torch::Tensor future = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
  // P_im = q_i.k_m / sqrt(head), 0 for m > i: a lag never brings in a later key.
  torch::Tensor P = torch::matmul(h.q, h.k.transpose(-2, -1)).mul_(scale_).masked_fill_(future, 0.0);  // [B, H, T, T]
  torch::Tensor s = lagged_scores(P).add_(ctx.score_bias.to(P.scalar_type()));  // causal mask (+ ALiBi)
  torch::Tensor A = attn_dropout(torch::softmax(s, -1));                         // [B, H, T, T]
  return merge(torch::matmul(A, h.v));                                           // [B, H, T, head]
}

}  // namespace egm
