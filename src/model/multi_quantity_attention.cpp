// Multi-quantity attention (ablation): energy plus phase coherence and/or
// spectral flux in the gate (mq_e, mq_ep, mq_ef, mq_epf).
#include "model/ablation_attention.h"

#include <utility>

#include "model/kernels/causal_attention_kernels.h"

namespace egm {

namespace {
constexpr double kTermInit = 0.01;  // l_E, l_phi, l_F start small: the model starts near standard attention
}

MultiQuantityAttentionImpl::MultiQuantityAttentionImpl(const ModelConfig& config, int64_t layer, bool use_phase,
                                                       bool use_flux)
    : ScaleMixedGateAttentionImpl(config, layer, MorletFilterBank::kScales, "mq"),
      bank(*this, config.n_head),
      use_phase_(use_phase),
      use_flux_(use_flux) {
  const int64_t H = config.n_head;
  l_sim = register_parameter("l_sim", torch::zeros({H}));
  l_E = register_parameter("l_E", torch::zeros({H}));
  if (use_phase_) l_phi = register_parameter("l_phi", torch::zeros({H}));
  if (use_flux_) l_F = register_parameter("l_F", torch::zeros({H}));
  reset_parameters();
}

void MultiQuantityAttentionImpl::reset_parameters() {
  ScaleMixedGateAttentionImpl::reset_parameters();
  bank.reset_parameters();
  torch::NoGradGuard no_grad;
  l_sim.fill_(1.0);
  l_E.fill_(kTermInit);
  if (use_phase_) l_phi.fill_(kTermInit);
  if (use_flux_) l_F.fill_(kTermInit);
}

void MultiQuantityAttentionImpl::report_params(LearnedParams& out) const {
  ScaleMixedGateAttentionImpl::report_params(out);
  bank.report(out, module_, layer_);
  torch::NoGradGuard no_grad;
  const std::pair<const char*, const torch::Tensor*> terms[] = {
      {"l_sim", &l_sim}, {"l_E", &l_E}, {"l_phi", &l_phi}, {"l_F", &l_F}};
  for (const auto& [name, t] : terms) {
    if (!t->defined()) continue;  // a term this variant does not have
    torch::Tensor v = t->to(torch::kCPU, torch::kFloat64).contiguous();
    for (int64_t h = 0; h < v.size(0); ++h) out.push_back({module_, layer_, h, name, v[h].item<double>()});
  }
}

torch::Tensor MultiQuantityAttentionImpl::key_terms(const MorletFilterBank::Response& r,
                                                    const torch::Tensor& energy) const {
  const int64_t H = l_E.size(0), T = energy.size(-1);
  auto per_head = [H](const torch::Tensor& l) { return l.view({1, H, 1}); };
  torch::Tensor E = energy.mean(2);                                      // [B, H, T]: mean over scales
  torch::Tensor terms = per_head(l_E) * zscore_over_time(E);
  if (use_phase_) {
    // atan2(0, 0) = 0 as in torch/numpy, but its gradient there is 0/0: evaluate
    // it at (1, 0) instead (same value 0, zero gradient) wherever re = im = 0.
    torch::Tensor origin = energy == 0;                                  // energy = re^2 + im^2
    torch::Tensor phi = torch::atan2(r.im.masked_fill(origin, 0.0), r.re.masked_fill(origin, 1.0)).mean(2);
    terms = terms + per_head(l_phi) * phi.cos();
  }
  if (use_flux_) {
    torch::Tensor step = (E.narrow(-1, 1, T - 1) - E.narrow(-1, 0, T - 1)).abs();       // |E_t - E_{t-1}|, t >= 1
    torch::Tensor F = torch::cat({torch::zeros_like(E.narrow(-1, 0, 1)), step}, -1);   // F_0 = 0: [B, H, T]
    terms = terms + per_head(l_F) * zscore_over_time(F);
  }
  return terms;  // [B, H, T]
}

torch::Tensor MultiQuantityAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  const int64_t H = n_head_;
  Heads h = project(x, ctx);
  MorletFilterBank::Response r = bank.apply(x.mean(-1));  // [B, H, 4, T] each
  torch::Tensor energy = r.re.square() + r.im.square();   // [B, H, 4, T]
  // l_sim folds into q (cheaper than scaling [B, H, T, T]); the mask is not scaled.
  torch::Tensor q = h.q * (l_sim * scale_).view({1, H, 1, 1}).to(h.q.scalar_type());
  torch::Tensor s;                                                                 // [B, H, T, T]
  if (causal_kernels_apply(q, h.k))
    s = causal_scores(q, h.k, 1.0, ctx.alibi_bias);                                // causal -inf (+ ALiBi)
  else
    s = torch::matmul(q, h.k.transpose(-2, -1)).add_(ctx.score_bias.to(q.scalar_type()));
  s.add_(key_terms(r, energy).unsqueeze(2).to(s.scalar_type()));                  // per key j, every row
  torch::Tensor P = torch::softmax(s, -1);
  return merge(key_gated_mix(P, mixed_gate(energy), h.v));
}

}  // namespace egm
