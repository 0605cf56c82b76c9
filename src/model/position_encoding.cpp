// What every position encoding shares: the causal mask bias, the attention
// context cached per length, and the factory from a position kind to its module.
#include "model/position_encoding.h"

#include "model/position_encodings.h"
#include "util/error.h"

namespace egm {

torch::Tensor causal_mask_bias(int64_t T, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  // -inf strictly above the diagonal: after softmax a query gives the keys after it exactly zero weight.
  return torch::full({T, T}, -std::numeric_limits<float>::infinity(), opts).triu(1).unsqueeze(0);
}

AttentionContext PositionEncodingImpl::attention_context(int64_t T, const torch::Device& device) {
  AttentionContext ctx;
  ctx.score_bias = causal_mask_bias(T, device);
  return ctx;
}

const AttentionContext& PositionEncodingImpl::cached_attention_context(int64_t T, const torch::Device& device) {
  // Tensors made under InferenceMode cannot enter a later autograd graph: never keep those.
  if (c10::InferenceMode::is_enabled()) {
    cached_length_ = -1;
    cached_context_ = attention_context(T, device);
    return cached_context_;
  }
  // Rebuilt only when the length or device changes: evaluation and training alternate few lengths.
  if (T != cached_length_ || device != cached_device_) {
    cached_context_ = attention_context(T, device);
    cached_length_ = T;
    cached_device_ = device;
  }
  return cached_context_;
}

namespace {
class NoPositionImpl : public PositionEncodingImpl {
 public:
  torch::Tensor input_table(int64_t, const torch::Device&) override { return {}; }
};
}  // namespace

// "wpe" for the kinds with a learned table, so their table's parameter name (and init seed) is the same.
std::string position_module_name(const std::string& kind) {
  if (kind == "learned" || kind == "rope") return "wpe";
  if (kind == "mope") return "mope";
  return "pos";
}

std::shared_ptr<PositionEncodingImpl> make_position_encoding(const std::string& kind, const ModelConfig& c) {
  if (kind == "learned") return std::make_shared<LearnedPositionImpl>(c);
  if (kind == "sincos") return std::make_shared<SinusoidalPositionImpl>(c);
  if (kind == "mope") return std::make_shared<MorletPositionImpl>(c);
  if (kind == "rope") return std::make_shared<RelativePositionImpl>(c, /*learned_table=*/true, /*rope=*/true, /*alibi=*/false);
  if (kind == "rope_only") return std::make_shared<RelativePositionImpl>(c, false, true, false);
  if (kind == "alibi") return std::make_shared<RelativePositionImpl>(c, false, false, true);
  if (kind == "none") return std::make_shared<NoPositionImpl>();
  EGM_THROW(ConfigError, "unknown position encoding '{}'", kind);
}

}  // namespace egm
