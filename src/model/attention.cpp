#include "model/attention.h"

#include <cmath>

#include "model/ablation_attention.h"
#include "model/attention_variants.h"
#include "model/rotary.h"
#include "util/error.h"

namespace egm {

AttentionImpl::AttentionImpl(const ModelConfig& config, int64_t layer)
    : config_(config), layer_(layer), n_head_(config.n_head), head_size_(config.head_size()),
      scale_(1.0 / std::sqrt(static_cast<double>(config.head_size()))) {
  const int64_t d = config.d_model;
  c_attn = register_module("c_attn", torch::nn::Linear(torch::nn::LinearOptions(d, 3 * d).bias(false)));
  c_proj = register_module("c_proj", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(true)));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout));
}

AttentionImpl::Heads AttentionImpl::project(const torch::Tensor& x, const AttentionContext& ctx) {
  const int64_t B = x.size(0), T = x.size(1);
  // [B, T, 3d] -> [B, T, 3, H, head] -> [3, B, H, T, head]
  torch::Tensor qkv = c_attn(x).view({B, T, 3, n_head_, head_size_}).permute({2, 0, 3, 1, 4});
  Heads h{qkv[0], qkv[1], qkv[2]};
  if (ctx.rope_cos.defined()) {
    h.q = apply_rope(h.q, ctx.rope_cos, ctx.rope_sin);
    h.k = apply_rope(h.k, ctx.rope_cos, ctx.rope_sin);
  }
  return h;
}

torch::Tensor AttentionImpl::scores(const Heads& h, const AttentionContext& ctx) const {
  // baddbmm-style: bias + scale * q k^T in one pass over [B, H, T, T].
  torch::Tensor s = torch::matmul(h.q, h.k.transpose(-2, -1)).mul_(scale_);
  return s.add_(ctx.score_bias.to(s.scalar_type()));
}

torch::Tensor AttentionImpl::merge(const torch::Tensor& y) {
  const int64_t B = y.size(0), T = y.size(2);
  return c_proj(y.transpose(1, 2).reshape({B, T, n_head_ * head_size_}));
}

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
