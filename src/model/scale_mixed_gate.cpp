// The gate shared by the multi-scale ablations (several projections, Morlet,
// Daubechies, multi-quantity): per-scale energies z-scored over time, each
// gated by its own tau and alpha, mixed by softmax weights per head.
#include "model/ablation_attention.h"

namespace egm {

torch::Tensor zscore_over_time(const torch::Tensor& e) {
  if (e.size(-1) == 1) return torch::zeros_like(e);  // one position: z = 0 by definition
  torch::Tensor centred = e - e.mean(-1, /*keepdim=*/true);
  torch::Tensor var = centred.square().mean(-1, /*keepdim=*/true);  // population variance
  // max(std, 1e-8) written as sqrt(max(var, 1e-16)): same value, finite gradient at var = 0.
  return centred / var.clamp_min(1e-16).sqrt();
}

ScaleMixedGateAttentionImpl::ScaleMixedGateAttentionImpl(const ModelConfig& config, int64_t layer,
                                                         int64_t n_scales, std::string module)
    : AttentionImpl(config, layer), module_(std::move(module)) {
  tau = register_parameter("tau", torch::zeros({config.n_head, n_scales}));
  alpha = register_parameter("alpha", torch::zeros({config.n_head, n_scales}));
  scale_w = register_parameter("scale_w", torch::zeros({config.n_head, n_scales}));
  ScaleMixedGateAttentionImpl::reset_parameters();
}

void ScaleMixedGateAttentionImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  tau.fill_(config_.ega_tau_init);
  alpha.fill_(config_.ega_alpha_init);
  scale_w.zero_();
}

void ScaleMixedGateAttentionImpl::report_params(LearnedParams& out) const {
  torch::NoGradGuard no_grad;
  torch::Tensor t = tau.to(torch::kCPU, torch::kFloat64).contiguous();
  torch::Tensor a = alpha.to(torch::kCPU, torch::kFloat64).contiguous();
  torch::Tensor mix = torch::softmax(scale_w.to(torch::kCPU, torch::kFloat64), -1).contiguous();
  const int64_t S = t.size(1);
  for (int64_t h = 0; h < t.size(0); ++h) {
    for (int64_t s = 0; s < S; ++s) {
      out.push_back({module_, layer_, h * S + s, "tau", t[h][s].item<double>()});
      out.push_back({module_, layer_, h * S + s, "alpha", a[h][s].item<double>()});
      out.push_back({module_, layer_, h * S + s, "mix", mix[h][s].item<double>()});
    }
  }
}

torch::Tensor ScaleMixedGateAttentionImpl::mixed_gate(const torch::Tensor& energy) const {
  const int64_t H = tau.size(0), S = tau.size(1);
  torch::Tensor z = zscore_over_time(energy);                                                   // [B, H|1, S, T]
  torch::Tensor g = torch::sigmoid(alpha.view({1, H, S, 1}) * (z - tau.view({1, H, S, 1})));  // [B, H, S, T]
  torch::Tensor mix = torch::softmax(scale_w, -1).view({1, H, S, 1});
  return (g * mix).sum(2);                                                                      // [B, H, T]
}

}  // namespace egm
