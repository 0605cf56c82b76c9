// ALiBi: no input table; a per-head linear distance penalty (slopes 2^(-8h/H))
// added to the causal attention scores.
#include "model/position_encodings.h"
#include "model/rotary.h"
#include "util/error.h"

namespace egm {

torch::Tensor alibi_bias(int64_t n_head, int64_t T, const torch::Device& device) {
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  torch::Tensor h = torch::arange(1, n_head + 1, f32);
  torch::Tensor slopes = torch::pow(2.0, -8.0 * h / static_cast<double>(n_head));  // [H]
  torch::Tensor i = torch::arange(T, f32).unsqueeze(1);
  torch::Tensor j = torch::arange(T, f32).unsqueeze(0);
  torch::Tensor distance = (i - j).clamp_min(0);  // above the diagonal the causal mask wins anyway
  return (-slopes.view({n_head, 1, 1}) * distance.unsqueeze(0)).to(device);  // [H, T, T]
}

RelativePositionImpl::RelativePositionImpl(const ModelConfig& c, bool learned_table, bool rope, bool alibi)
    : n_head_(c.n_head), head_size_(c.head_size()), rope_(rope), alibi_(alibi) {
  // Zeros here; init.cpp draws the table ("weight") like every other learned table.
  if (learned_table) weight = register_parameter("weight", torch::zeros({c.block_size, c.d_model}));
}

torch::Tensor RelativePositionImpl::input_table(int64_t T, const torch::Device&) {
  if (!weight.defined()) return {};
  EGM_REQUIRE(T <= weight.size(0), ConfigError, "sequence length {} exceeds the position table ({})", T,
              weight.size(0));
  return weight.slice(0, 0, T);
}

AttentionContext RelativePositionImpl::attention_context(int64_t T, const torch::Device& device) {
  AttentionContext ctx = PositionEncodingImpl::attention_context(T, device);
  if (rope_) std::tie(ctx.rope_cos, ctx.rope_sin) = rope_tables(T, head_size_, device);
  if (alibi_) {
    ctx.alibi_bias = alibi_bias(n_head_, T, device);
    // Folded into score_bias for the eager and SDPA paths; alibi_bias stays separate for the CPU kernels, which add it themselves.
    ctx.score_bias = ctx.score_bias + ctx.alibi_bias;
  }
  return ctx;
}

}  // namespace egm
