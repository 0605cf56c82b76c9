// Standard causal attention, with RoPE or ALiBi where the position asks, on
// the kernels, SDPA and plain-ops paths.
#include "model/attention_variants.h"
#include "model/kernels/causal_attention_kernels.h"
#include "model/kernels/flash_attention_kernels.h"

namespace egm {

StandardAttentionImpl::StandardAttentionImpl(const ModelConfig& config, int64_t layer)
    : AttentionImpl(config, layer) {}

torch::Tensor StandardAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  torch::Tensor qkv = c_attn(x);  // [B, T, 3d]
  // SDPA: RoPE rotates q and k first (split_heads), ALiBi enters as the additive mask.
  if (path_for(qkv) == Path::sdpa) {
    Heads h = split_heads(qkv, ctx);
    return merge(sdpa(h.q, h.k, h.v, ctx));
  }
  // CPU without RoPE: from the projection's output to c_proj's input, no head split or merge copied.
  if (flash_attention_enabled() && !ctx.rope_cos.defined() && kernels_apply(qkv, qkv))
    return c_proj(flash_causal_attention_qkv(qkv, n_head_, scale_, ctx.alibi_bias, attn_dropout->options.p(),
                                             attn_dropout->is_training()));
  Heads h = split_heads(qkv, ctx);
  if (flash_attention_enabled() && kernels_apply(h.q, h.v))  // CPU: [B, H, T, T] never stored
    return merge(flash_causal_attention(h.q, h.k, h.v, scale_, ctx.alibi_bias, attn_dropout->options.p(),
                                        attn_dropout->is_training()));
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);  // [B, H, T, T]
  return merge(mix(P, h.v));                               // dropout(P) v: [B, H, T, head]
}

}  // namespace egm
