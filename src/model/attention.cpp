// The attention paths of model.attention_path: the CPU kernels, SDPA and plain
// ops, chosen per call; the SDPA formulations of each variant live here.
#include "model/attention.h"

#include <cmath>

#include "model/ablation_attention.h"
#include "model/attention_variants.h"
#include "model/energy_gate_functions.h"
#include "model/kernels/causal_attention_kernels.h"
#include "model/rotary.h"
#include "util/error.h"

namespace egm {

AttentionImpl::AttentionImpl(const ModelConfig& config, int64_t layer)
    : config_(config), layer_(layer), n_head_(config.n_head), head_size_(config.head_size()),
      // 1/sqrt(head size): the usual scaled dot product, so score variance stays near 1 at init.
      scale_(1.0 / std::sqrt(static_cast<double>(config.head_size()))) {
  const int64_t d = config.d_model;
  // One fused projection for q, k and v (one matmul instead of three).
  c_attn = register_module("c_attn", torch::nn::Linear(torch::nn::LinearOptions(d, 3 * d).bias(false)));
  c_proj = register_module("c_proj", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(true)));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout));
}

AttentionImpl::Heads AttentionImpl::split_heads(const torch::Tensor& fused, const AttentionContext& ctx) {
  const int64_t B = fused.size(0), T = fused.size(1);
  // [B, T, 3d] -> [B, T, 3, H, head] -> [3, B, H, T, head]; views, no copy. unbind, not
  // qkv[0..2]: its backward stacks the three gradients once instead of zero-filling
  // a [3, B, H, T, head] tensor per slice.
  torch::Tensor qkv = fused.view({B, T, 3, n_head_, head_size_}).permute({2, 0, 3, 1, 4});
  std::vector<torch::Tensor> parts = qkv.unbind(0);
  Heads h{parts[0], parts[1], parts[2]};
  // RoPE rotates q and k only; v carries content, not position.
  if (ctx.rope_cos.defined()) {
    h.q = apply_rope(h.q, ctx.rope_cos, ctx.rope_sin);
    h.k = apply_rope(h.k, ctx.rope_cos, ctx.rope_sin);
  }
  return h;
}

AttentionImpl::Path AttentionImpl::path_for(const torch::Tensor& x) const {
  // Decided per call from the tensor's device, so one model moved between devices takes the right path.
  const std::string path = resolved_attention_path(config_, x.is_cuda());
  if (path == "sdpa") return Path::sdpa;
  if (path == "eager") return Path::eager;
  return Path::kernels;
}

bool AttentionImpl::kernels_apply(const torch::Tensor& a, const torch::Tensor& b) const {
  return path_for(a) == Path::kernels && causal_kernels_apply(a, b);
}

torch::Tensor AttentionImpl::sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const AttentionContext& ctx, const torch::Tensor& extra_bias) {
  // Dropout only in training: SDPA applies the probability it is given, whatever the module's mode.
  SdpaCall call{q, k, v, std::nullopt, attn_dropout->is_training() ? attn_dropout->options.p() : 0.0,
                /*is_causal=*/false, scale_};
  if (!extra_bias.defined() && !ctx.alibi_bias.defined()) {
    call.is_causal = true;  // the causal mask alone: SDPA's flash kernels
  } else {
    // An additive mask: score_bias holds the causal -inf (and ALiBi), repeated for every copy of the keys.
    torch::Tensor mask = ctx.score_bias.to(q.scalar_type());  // [1 or H, T, T]
    if (extra_bias.defined()) {
      const int64_t copies = extra_bias.size(-1) / mask.size(-1);
      if (copies > 1) mask = mask.repeat({1, 1, copies});
      mask = extra_bias.to(q.scalar_type()) + mask;
    }
    call.mask = mask;
  }
  SdpaResult r = run_sdpa(call);
  torch::Tensor out = std::move(r.out);
  // Kept for egm bench's report of which SDPA backend ran.
  if (is_training()) last_sdpa_ = std::move(r);
  return out;
}

torch::Tensor AttentionImpl::scores(const Heads& h, const AttentionContext& ctx) const {
  // CPU: one kernel writes scale * q k^T + ALiBi and the causal -inf (causal_attention_kernels.h).
  if (kernels_apply(h.q, h.k)) return causal_scores(h.q, h.k, scale_, ctx.alibi_bias);
  // The eager path: score_bias holds the causal -inf above the diagonal (plus ALiBi where used).
  torch::Tensor s = torch::matmul(h.q, h.k.transpose(-2, -1)).mul_(scale_);
  return s.add_(ctx.score_bias.to(s.scalar_type()));
}

torch::Tensor AttentionImpl::merge(const torch::Tensor& y) {
  const int64_t B = y.size(0), T = y.size(2);
  // [B, H, T, head] -> [B, T, H*head]; reshape copies, since the transpose is not contiguous.
  return c_proj(y.transpose(1, 2).reshape({B, T, n_head_ * head_size_}));
}

torch::Tensor AttentionImpl::mix(const torch::Tensor& P, const torch::Tensor& v) {
  if (kernels_apply(P, v))
    return causal_dropout_matmul(P, v, attn_dropout->options.p(), attn_dropout->is_training());
  return torch::matmul(attn_dropout(P), v);
}

namespace {
// [num | den] -> num / max(den, 1e-8), the renormalised gated mix.
torch::Tensor renormalise(const torch::Tensor& num_den) {
  const int64_t E = num_den.size(-1) - 1;
  return num_den.narrow(-1, 0, E) / num_den.narrow(-1, E, 1).clamp_min(1e-8);
}
}  // namespace

torch::Tensor AttentionImpl::key_gated_mix(const torch::Tensor& P, const torch::Tensor& g, const torch::Tensor& v) {
  if (kernels_apply(P, v)) {
    // The gate depends on the key only, so sum_j A_ij g_j v_j = A (g v) and the row sums
    // are A g: one product with [g v | g] instead of materialising A g ([B, H, T, T]).
    torch::Tensor gk = g.unsqueeze(-1).to(v.scalar_type());  // [B, H, T, 1]
    return renormalise(mix(P, torch::cat({v * gk, gk}, -1)));
  }
  torch::Tensor Ag = attn_dropout(P) * g.unsqueeze(2);                  // [B, H, T, T]: gate key columns
  torch::Tensor denom = Ag.sum(-1, /*keepdim=*/true).clamp_min(1e-8);  // [B, H, T, 1]
  return torch::matmul(Ag, v) / denom;
}

torch::Tensor AttentionImpl::pair_gated_mix(const torch::Tensor& P, const torch::Tensor& gate,
                                            const torch::Tensor& v) {
  if (kernels_apply(P, v)) {
    // dropout(P) * gate = dropout(P * gate) (same mask); a column of ones gives the row sums.
    return renormalise(mix(P * gate, torch::cat({v, torch::ones_like(v.narrow(-1, 0, 1))}, -1)));
  }
  torch::Tensor Ag = attn_dropout(P) * gate;
  torch::Tensor denom = Ag.sum(-1, /*keepdim=*/true).clamp_min(1e-8);
  return torch::matmul(Ag, v) / denom;
}

torch::Tensor AttentionImpl::affine_pair_gated_mix(const torch::Tensor& P, const torch::Tensor& a,
                                                   const torch::Tensor& c, const torch::Tensor& d,
                                                   const torch::Tensor& v) {
  if (kernels_apply(P, v) && a.scalar_type() == torch::kFloat32) {
    torch::Tensor v1 = torch::cat({v, torch::ones_like(v.narrow(-1, 0, 1))}, -1);  // ones: the row sums
    return renormalise(causal_gated_dropout_matmul(P, a, c, d, v1, attn_dropout->options.p(),
                                                   attn_dropout->is_training()));
  }
  return pair_gated_mix(P, affine_pair_gate(a, c, d), v);
}

torch::Tensor divide_by_column(const torch::Tensor& y_den, int64_t E) { return renormalise_by_column(y_den, E); }

// SDPA's fused kernels want the last dimension a multiple of 8; zero columns leave the products unchanged.
torch::Tensor pad_to_multiple_of_8(const torch::Tensor& v) {
  const int64_t E = v.size(-1), padded = (E + 7) / 8 * 8;
  return padded == E ? v : torch::constant_pad_nd(v, {0, padded - E});
}

torch::Tensor pad_to_width(const torch::Tensor& x, int64_t width) {
  const int64_t E = x.size(-1);
  return width == E ? x : torch::constant_pad_nd(x, {0, width - E});
}

torch::Tensor affine_pair_gate(const torch::Tensor& a, const torch::Tensor& c, const torch::Tensor& d) {
  return torch::addcmul(c.unsqueeze(-1), a.unsqueeze(-1), d.unsqueeze(-2)).sigmoid_();  // one fused pass
}

// The kinds config/variants.cpp lists; a kind added there needs its module here.
std::shared_ptr<AttentionImpl> make_attention(const std::string& kind, const ModelConfig& config, int64_t layer) {
  if (kind == "standard") return std::make_shared<StandardAttentionImpl>(config, layer);
  if (kind == "ega") return std::make_shared<EnergyGatedAttentionImpl>(config, layer);
  if (kind == "ega_causal") return std::make_shared<CausalEnergyGatedAttentionImpl>(config, layer);
  // Ablations (ABLATIONS.md).
  if (kind == "conv") return std::make_shared<ConvAttentionImpl>(config, layer);
  if (kind == "ega2") return std::make_shared<MultiEnergyGatedAttentionImpl>(config, layer, /*n_projections=*/2);
  if (kind == "ega4") return std::make_shared<MultiEnergyGatedAttentionImpl>(config, layer, /*n_projections=*/4);
  if (kind == "ega_morlet") return std::make_shared<MorletGatedAttentionImpl>(config, layer);
  if (kind == "ega_db2") return std::make_shared<DaubechiesGatedAttentionImpl>(config, layer, /*taps=*/4);
  if (kind == "ega_db4") return std::make_shared<DaubechiesGatedAttentionImpl>(config, layer, /*taps=*/8);
  if (kind == "mq_e" || kind == "mq_ep" || kind == "mq_ef" || kind == "mq_epf") {
    const bool phase = kind == "mq_ep" || kind == "mq_epf", flux = kind == "mq_ef" || kind == "mq_epf";
    return std::make_shared<MultiQuantityAttentionImpl>(config, layer, /*use_phase=*/phase, /*use_flux=*/flux);
  }
  EGM_THROW(ConfigError, "unknown attention '{}'", kind);
}

}  // namespace egm
