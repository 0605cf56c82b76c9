#include "model/attention_variants.h"
#include "model/causal_attention_kernels.h"
#include "model/flash_attention_kernels.h"

namespace egm {

StandardAttentionImpl::StandardAttentionImpl(const ModelConfig& config, int64_t layer)
    : AttentionImpl(config, layer) {}

torch::Tensor StandardAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  Heads h = project(x, ctx);
  if (flash_attention_enabled() && causal_kernels_apply(h.q, h.v))  // CPU: [B, H, T, T] never stored
    return merge(flash_causal_attention(h.q, h.k, h.v, scale_, ctx.alibi_bias, attn_dropout->options.p(),
                                        attn_dropout->is_training()));
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);  // [B, H, T, T]
  return merge(mix(P, h.v));                               // dropout(P) v: [B, H, T, head]
}

}  // namespace egm
