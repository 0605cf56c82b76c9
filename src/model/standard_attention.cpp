#include "model/attention_variants.h"

namespace egm {

StandardAttentionImpl::StandardAttentionImpl(const ModelConfig& config, int64_t layer)
    : AttentionImpl(config, layer) {}

torch::Tensor StandardAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  Heads h = project(x, ctx);
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);  // [B, H, T, T]
  return merge(mix(P, h.v));                               // dropout(P) v: [B, H, T, head]
}

}  // namespace egm
