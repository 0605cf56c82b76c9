// The paper's character-level GPT (SPEC.md section 3): token embedding plus
// a positional encoding, pre-LN blocks, final LayerNorm, and an LM head tied
// to the token embedding (no bias). Parameter names match the PyTorch
// reference in tests/reference, so weights compare by name.
#pragma once

#include <torch/torch.h>

#include <string>

#include "config/run_config.h"
#include "model/block.h"
#include "run/learned_param.h"
#include "model/position_encoding.h"

namespace egm {

class GPTImpl : public torch::nn::Module {
 public:
  explicit GPTImpl(const ModelConfig& config);

  // idx: [B, T] int64 with T <= block_size. Returns logits [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& idx);
  // Mean cross-entropy over all positions.
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets);

  // MoPE omega/sigma per pair, EGA tau/alpha per layer and head, ...
  LearnedParams learned_params() const;
  // The share of keys each EGA head lets through (gate > 1/2) on the windows idx [B, T],
  // in eval mode without gradients: {"ega", layer, head, "gate_open_share", share}. For
  // causal EGA the share is over the pairs j <= i. Empty when no layer has an EGA gate.
  LearnedParams gate_open_shares(const torch::Tensor& idx);
  int64_t num_parameters() const;
  // The SDPA backends the layers' last training-mode calls ran on and those that refused
  // one (each name once, in layer order; sdpa_backend.h); both empty when no layer called SDPA.
  struct SdpaUse {
    std::vector<std::string> backends, refused;
  };
  SdpaUse sdpa_use() const;
  const ModelConfig& config() const { return config_; }
  const std::string& attention_kind() const { return attention_kind_; }

  torch::nn::Embedding wte{nullptr};
  std::shared_ptr<PositionEncodingImpl> pos;
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Dropout drop{nullptr};

 private:
  ModelConfig config_;
  std::string attention_kind_, position_kind_;
};
TORCH_MODULE(GPT);

// Builds the model of a config and initialises it from `seed`.
GPT build_model(const ModelConfig& config, uint64_t seed);

}  // namespace egm
