// The MLP (c_fc, exact GELU, c_proj) and the pre-LN block: the attention of its
// kind and the MLP, each added back through residual dropout.
#include "model/block.h"

#include "model/kernels/counter_dropout.h"

namespace egm {

MlpImpl::MlpImpl(const ModelConfig& c) {
  c_fc = register_module("c_fc", torch::nn::Linear(c.d_model, 4 * c.d_model));
  c_proj = register_module("c_proj", torch::nn::Linear(4 * c.d_model, c.d_model));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return c_proj(torch::gelu(c_fc(x)));  // exact (erf) GELU
}

BlockImpl::BlockImpl(const ModelConfig& c, int64_t layer, const std::string& attention_kind) {
  // eps 1e-5: PyTorch's default, and GPT-2's.
  auto ln = torch::nn::LayerNormOptions({c.d_model}).eps(1e-5);
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(ln));
  attn = register_module("attn", make_attention(attention_kind, c, layer));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(ln));
  mlp = register_module("mlp", Mlp(c));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(c.dropout));
}

// Pre-LN: each sublayer sees a normalised input, and the residual stream itself is never normalised.
torch::Tensor BlockImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  torch::Tensor h = x + dropout(attn->forward(ln_1(x), ctx), resid_dropout);
  return h + dropout(mlp(ln_2(h)), resid_dropout);
}

}  // namespace egm
