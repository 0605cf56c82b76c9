// The energy gate's parameters and the key energies it z-scores (shared by the
// published and the causal EGA).
#include "model/attention_variants.h"
#include "util/torch_compat.h"

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
  // Always fp32, also under bf16/fp16 autocast: the z-score (the published and the
  // prefix statistics) and the gate are computed from these, and bf16's 8-bit
  // mantissa is too coarse for them (a z-score of keys whose energies differ in the
  // third digit would collapse). Everything downstream of e is pointwise, so it stays fp32.
  compat::NoAutocast fp32;
  return energy(x.to(torch::kFloat32)).transpose(1, 2);  // [B, T, H] -> [B, H, T]
}

}  // namespace egm
