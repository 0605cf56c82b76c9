// EGA with several energy projections (the series' first paper: ega2, ega4),
// their gates mixed by the shared multi-scale gate.
#include "model/ablation_attention.h"

namespace egm {

MultiEnergyGatedAttentionImpl::MultiEnergyGatedAttentionImpl(const ModelConfig& config, int64_t layer,
                                                             int64_t n_projections)
    : ScaleMixedGateAttentionImpl(config, layer, n_projections, "ega" + std::to_string(n_projections)),
      n_projections_(n_projections) {
  energy = register_module(
      "energy", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.n_head * n_projections)));
}

torch::Tensor MultiEnergyGatedAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  const int64_t B = x.size(0), T = x.size(1);
  Heads h = project(x, ctx);
  // energy row h*n+s is projection s of head h: [B, T, H*n] -> [B, H, n, T]
  torch::Tensor e = energy(x).view({B, T, n_head_, n_projections_}).permute({0, 2, 3, 1});
  torch::Tensor g = mixed_gate(e);                                     // [B, H, T]
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);  // dropout comes before the gate, as EGA
  return merge(key_gated_mix(P, g, h.v));
}

}  // namespace egm
