// Causal EGA: the published gate with prefix statistics (each query's gate sees
// only keys up to it), on the kernels, SDPA and plain-ops paths.
#include "model/attention_variants.h"
#include "model/energy_gate_functions.h"
#include "model/kernels/causal_attention_kernels.h"
#include "model/kernels/flash_attention_kernels.h"

namespace egm {

CausalEnergyGatedAttentionImpl::GateTerms CausalEnergyGatedAttentionImpl::prefix_gate_terms(
    const torch::Tensor& e) const {
  const int64_t T = e.size(-1);
  // Prefix statistics in float64 on [B, H, T] (cheap), shifted by e_0 so that
  // the cumulative sums do not cancel catastrophically; row 0 gets z = 0 exactly.
  torch::Tensor e64 = e.to(torch::kFloat64);
  torch::Tensor d = e64 - e64.narrow(-1, 0, 1);                                // [B, H, T]
  torch::Tensor n = torch::arange(1, T + 1, e64.options());
  torch::Tensor mean = d.cumsum(-1) / n;                                       // mean over j <= i
  torch::Tensor var = (d.square().cumsum(-1) / n - mean.square()).clamp_min(1e-16);
  torch::Tensor inv_std = var.rsqrt();                                         // 1 / max(std, 1e-8)
  // alpha (z_ij - tau) = alpha (d_j - mean_i) / std_i - alpha tau = a_i d_j + c_i with
  // a_i = alpha / std_i and c_i = -alpha (mean_i / std_i + tau).
  torch::Tensor alpha64 = alpha.to(torch::kFloat64).view({1, -1, 1});
  torch::Tensor tau64 = tau.to(torch::kFloat64).view({1, -1, 1});
  return {(alpha64 * inv_std).to(e.scalar_type()), (-alpha64 * (mean * inv_std + tau64)).to(e.scalar_type()),
          d.to(e.scalar_type())};
}

torch::Tensor CausalEnergyGatedAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  Heads h = project(x, ctx);
  torch::Tensor e = energies(x);
  // The SDPA path takes the prefix terms from one autograd function (its backward by hand).
  GateTerms t = path_for(h.q) == Path::sdpa ? egm::prefix_gate_terms(e, alpha, tau) : prefix_gate_terms(e);
  if (probe_gate) {
    // Only pairs j <= i exist for query i: T (T + 1) / 2 of them per window and head.
    torch::NoGradGuard no_grad;
    torch::Tensor g = affine_pair_gate(t.a, t.c, t.d);
    const int64_t B = g.size(0), T = g.size(-1);
    torch::Tensor open = (g > 0.5).tril().to(torch::kFloat64).sum(at::IntArrayRef{0, 2, 3});
    gate_open_share = (open / static_cast<double>(B * T * (T + 1) / 2)).cpu();
  }
  if (path_for(h.q) == Path::sdpa) {
    // One copy of the keys when that is exact: score s_ij + log g_ij, value v_j. SDPA's output
    // is then sum_j P_ij g_ij v_j / sum_j P_ij g_ij, the published renormalisation as long as
    // the clamp max(., 1e-8) does not bind. It does not where every row's smallest gate is at
    // least 1e-8 (the sum is an average of gates, P's row summing to 1), which
    // gate_clamp_may_bind checks; dropout would renormalise by the undropped weights, and a
    // CUDA graph's capture cannot read the check's answer back: the two-copy form below then.
    const bool dropout_on = attn_dropout->is_training() && attn_dropout->options.p() > 0.0;
    if (!dropout_on && host_reads_allowed() && !gate_clamp_may_bind(t.a, t.c, t.d))
      return merge(sdpa(h.q, h.k, h.v, ctx, affine_log_gate(t.a, t.c, t.d)));
    // Exactly, always: every key enters twice, once with score s_ij + log g_ij and value [v_j | 1],
    // once with s_ij + log(1 - g_ij) and value 0. The two copies' weights sum to exp(s_ij),
    // so SDPA's normaliser is softmax's own and its output is [sum_j A_ij g_ij v_j |
    // sum_j A_ij g_ij] with A = dropout(P), the published sums (the clamp and a shut gate
    // included).
    torch::Tensor x_gate = torch::addcmul(t.c.unsqueeze(-1), t.a.unsqueeze(-1), t.d.unsqueeze(-2));  // [B, H, T, T]
    torch::Tensor log_gate = torch::cat({torch::log_sigmoid(x_gate), torch::log_sigmoid(-x_gate)}, -1);
    torch::Tensor v1 = pad_to_multiple_of_8(torch::cat({h.v, torch::ones_like(h.v.narrow(-1, 0, 1))}, -1));
    torch::Tensor v2 = torch::cat({v1, torch::zeros_like(v1)}, 2);  // [B, H, 2T, E']
    torch::Tensor y = sdpa(h.q, torch::cat({h.k, h.k}, 2), v2, ctx, log_gate);
    return merge(divide_by_column(y, head_size_));
  }
  if (flash_attention_enabled() && kernels_apply(h.q, h.v) && t.a.scalar_type() == torch::kFloat32) {
    torch::Tensor v1 = torch::cat({h.v, torch::ones_like(h.v.narrow(-1, 0, 1))}, -1);  // ones: the row sums
    return merge(divide_by_last_column(flash_causal_gated_attention(
        h.q, h.k, t.a, t.c, t.d, v1, scale_, ctx.alibi_bias, attn_dropout->options.p(), attn_dropout->is_training())));
  }
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);
  // Dropout, then the [B, H, T, T] gate, formed inside the mix on CPU.
  return merge(affine_pair_gated_mix(P, t.a, t.c, t.d, h.v));
}

}  // namespace egm
