// A pre-LayerNorm transformer block:
//   x = x + dropout(attn(ln_1(x)));  x = x + dropout(mlp(ln_2(x)))
// with mlp = c_proj(gelu(c_fc(x))), d -> 4d -> d.
#pragma once

#include <torch/torch.h>

#include "model/attention.h"

namespace egm {

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(Mlp);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& config, int64_t layer, const std::string& attention_kind);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx);

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  std::shared_ptr<AttentionImpl> attn;
  Mlp mlp{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};
};
TORCH_MODULE(Block);

}  // namespace egm
