#include "model/attention_variants.h"
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
  torch::Tensor g = key_gate(energies(x));                              // [B, H, T]
  if (probe_gate) gate_open_share = (g > 0.5).to(torch::kFloat64).mean(at::IntArrayRef{0, 2}).cpu();
  if (path_for(h.q) == Path::sdpa) {
    // SDPA mixes [g v | g]: its output is [sum_j A_ij g_j v_j | sum_j A_ij g_j] with A = dropout(P),
    // exactly the two sums of the published renormalisation, the clamp included.
    torch::Tensor gk = g.unsqueeze(-1).to(h.v.scalar_type());  // [B, H, T, 1]
    torch::Tensor y = sdpa(h.q, h.k, pad_to_multiple_of_8(torch::cat({h.v * gk, gk}, -1)), ctx);
    return merge(divide_by_column(y, head_size_));
  }
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

}  // namespace egm
