// Positional encodings. Each may add a [T, d] table to the token embeddings
// (learned, sincos, MoPE) and/or shape the attention scores (RoPE, ALiBi);
// the GPT asks for both once per forward and shares them across layers.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "config/run_config.h"
#include "model/attention_context.h"
#include "run/learned_param.h"

namespace egm {

class PositionEncodingImpl : public torch::nn::Module {
 public:
  // [T, d] added to the token embeddings, or an undefined tensor for none.
  virtual torch::Tensor input_table(int64_t T, const torch::Device& device) = 0;
  // RoPE tables and the score bias (causal mask + ALiBi) for length T.
  virtual AttentionContext attention_context(int64_t T, const torch::Device& device);
  // The same, kept from the last call with this (T, device): the tables are
  // constants, so a training run builds them once instead of every step.
  const AttentionContext& cached_attention_context(int64_t T, const torch::Device& device);
  virtual void report_params(LearnedParams& out) const { (void)out; }
  // Sets this module's parameters to their initial values (deterministic ones only).
  virtual void reset_parameters() {}

 private:
  AttentionContext cached_context_;
  int64_t cached_length_ = -1;
  torch::Device cached_device_{torch::kCPU};
};

// kind: one of position_kinds() (config/variants.h).
std::shared_ptr<PositionEncodingImpl> make_position_encoding(const std::string& kind, const ModelConfig& config);

// The name the GPT registers the encoding under, so parameters read
// "wpe.weight" (learned table) and "mope.log_omega" as in the reference.
std::string position_module_name(const std::string& kind);

// [1, T, T] additive causal mask: 0 on and below the diagonal, -inf above.
torch::Tensor causal_mask_bias(int64_t T, const torch::Device& device);

}  // namespace egm
