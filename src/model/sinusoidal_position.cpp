// The fixed sinusoidal table of "Attention Is All You Need", added to the
// token embeddings.
#include "model/position_encodings.h"
#include "util/error.h"

namespace egm {

SinusoidalPositionImpl::SinusoidalPositionImpl(const ModelConfig& c) {
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor pos = torch::arange(c.block_size, f64).unsqueeze(1);                        // [T, 1]
  torch::Tensor w = torch::pow(10000.0, -torch::arange(0, c.d_model, 2, f64) / double(c.d_model));  // [d/2]
  torch::Tensor angle = pos * w.unsqueeze(0);                                               // [T, d/2]
  table_ = torch::stack({angle.sin(), angle.cos()}, -1).reshape({c.block_size, c.d_model}).to(torch::kFloat32);
  table_ = register_buffer("table", table_);
}

torch::Tensor SinusoidalPositionImpl::input_table(int64_t T, const torch::Device&) {
  EGM_REQUIRE(T <= table_.size(0), ConfigError, "sequence length {} exceeds the sinusoidal table ({})", T,
              table_.size(0));
  return table_.slice(0, 0, T);
}

}  // namespace egm
