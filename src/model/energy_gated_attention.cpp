// Published EGA: a sigmoid gate on each key from its energy z-scored over the
// whole window, renormalised; on the kernels, SDPA and plain-ops paths.
#include "model/attention_variants.h"
#include "model/energy_gate_functions.h"
#include "model/kernels/causal_attention_kernels.h"
#include "model/kernels/flash_attention_kernels.h"

namespace egm {

torch::Tensor EnergyGatedAttentionImpl::key_gate(const torch::Tensor& e) const {
  const int64_t T = e.size(-1);
  torch::Tensor z;
  if (T == 1) {
    z = torch::zeros_like(e);  // SPEC: with one position the z-score is 0
  } else {
    torch::Tensor mean = e.mean(-1, /*keepdim=*/true);
    torch::Tensor var = (e - mean).square().mean(-1, /*keepdim=*/true);  // population variance
    // max(std, 1e-8) written as sqrt(max(var, 1e-16)): same value, finite gradient at var = 0.
    z = (e - mean) / var.clamp_min(1e-16).sqrt();
  }
  return torch::sigmoid(alpha.view({1, -1, 1}) * (z - tau.view({1, -1, 1})));  // [B, H, T]
}

torch::Tensor EnergyGatedAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  Heads h = project(x, ctx);
  torch::Tensor e = energies(x);  // [B, H, T]
  if (path_for(h.q) == Path::sdpa) {
    if (probe_gate) record_open_share(key_gate(e));
    // SDPA mixes [g v | g]: its output is [sum_j A_ij g_j v_j | sum_j A_ij g_j] with A = dropout(P),
    // exactly the two sums of the published renormalisation, the clamp included. The value is
    // built in one autograd function (gate, z-score and assembly, its backward by hand), one
    // column wider than q and k and padded to a multiple of 8; q and k get zero columns to the
    // same width, which leaves q k^T as it is (the scale is passed, not taken from the width)
    // and lets the backends that need one head size for q, k and v (flash) take the call.
    const int64_t width = (head_size_ + 1 + 7) / 8 * 8;
    torch::Tensor v_gated = published_gated_value(e, alpha, tau, h.v, width);  // [B, H, T, width]
    auto [q, k] = pad_query_key(h.q, h.k, width);
    torch::Tensor y = sdpa(q, k, v_gated, ctx);
    return merge(divide_by_column(y, head_size_));
  }
  torch::Tensor g = key_gate(e);  // [B, H, T]
  if (probe_gate) record_open_share(g);
  if (flash_attention_enabled() && kernels_apply(h.q, h.v)) {
    // The gate depends on the key only: sum_j A_ij g_j v_j and sum_j A_ij g_j are A [g v | g].
    torch::Tensor gk = g.unsqueeze(-1).to(h.v.scalar_type());  // [B, H, T, 1]
    torch::Tensor y = flash_causal_attention(h.q, h.k, torch::cat({h.v * gk, gk}, -1), scale_, ctx.alibi_bias,
                                             attn_dropout->options.p(), attn_dropout->is_training());
    return merge(divide_by_last_column(y));
  }
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);  // [B, H, T, T]
  return merge(key_gated_mix(P, g, h.v));                  // dropout BEFORE the gate, as published
}

void EnergyGatedAttentionImpl::record_open_share(const torch::Tensor& g) {
  gate_open_share = (g > 0.5).to(torch::kFloat64).mean(at::IntArrayRef{0, 2}).cpu();
}

}  // namespace egm
