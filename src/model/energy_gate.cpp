#include "model/attention_variants.h"

namespace egm {

EnergyGateAttentionImpl::EnergyGateAttentionImpl(const ModelConfig& config, int64_t layer)
    : AttentionImpl(config, layer) {
  energy = register_module("energy", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.n_head)));
  tau = register_parameter("tau", torch::zeros({config.n_head}));
  alpha = register_parameter("alpha", torch::zeros({config.n_head}));
  reset_parameters();
}

void EnergyGateAttentionImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  tau.fill_(config_.ega_tau_init);
  alpha.fill_(config_.ega_alpha_init);
}

void EnergyGateAttentionImpl::report_params(LearnedParams& out) const {
  torch::Tensor t = tau.detach().to(torch::kCPU, torch::kFloat64);
  torch::Tensor a = alpha.detach().to(torch::kCPU, torch::kFloat64);
  for (int64_t h = 0; h < t.size(0); ++h) {
    out.push_back({"ega", layer_, h, "tau", t[h].item<double>()});
    out.push_back({"ega", layer_, h, "alpha", a[h].item<double>()});
  }
}

torch::Tensor EnergyGateAttentionImpl::energies(const torch::Tensor& x) {
  return energy(x).transpose(1, 2);  // [B, T, H] -> [B, H, T]
}

}  // namespace egm
