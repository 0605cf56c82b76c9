// The learned absolute position table ([block_size, d], the paper's baseline):
// its first T rows are added to the token embeddings.
#include "model/position_encodings.h"
#include "util/error.h"

namespace egm {

LearnedPositionImpl::LearnedPositionImpl(const ModelConfig& c) {
  weight = register_parameter("weight", torch::zeros({c.block_size, c.d_model}));
}

torch::Tensor LearnedPositionImpl::input_table(int64_t T, const torch::Device&) {
  EGM_REQUIRE(T <= weight.size(0), ConfigError, "sequence length {} exceeds the position table ({})", T,
              weight.size(0));
  return weight.slice(0, 0, T);  // [T, d]
}

}  // namespace egm
