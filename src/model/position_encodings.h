// The concrete positional encodings (SPEC.md sections 2-3). Constructed
// through make_position_encoding(); declared here for tests and analysis.
#pragma once

#include "model/position_encoding.h"

namespace egm {

// Learned absolute table [block_size, d] (the paper's baseline), registered
// as "weight" so the GPT's module name makes it "wpe.weight".
class LearnedPositionImpl : public PositionEncodingImpl {
 public:
  explicit LearnedPositionImpl(const ModelConfig& c);
  torch::Tensor input_table(int64_t T, const torch::Device& device) override;
  torch::Tensor weight;
};

// Fixed sinusoidal table: PE[p,2i] = sin(p w_i), PE[p,2i+1] = cos(p w_i), w_i = 10000^(-2i/d).
class SinusoidalPositionImpl : public PositionEncodingImpl {
 public:
  explicit SinusoidalPositionImpl(const ModelConfig& c);
  torch::Tensor input_table(int64_t T, const torch::Device& device) override;
 private:
  torch::Tensor table_;  // [block_size, d] buffer
};

// No table; optionally RoPE on q,k (rope_only) and/or ALiBi score bias.
// With a learned table as well, this is the paper's `rope`.
class RelativePositionImpl : public PositionEncodingImpl {
 public:
  RelativePositionImpl(const ModelConfig& c, bool learned_table, bool rope, bool alibi);
  torch::Tensor input_table(int64_t T, const torch::Device& device) override;
  AttentionContext attention_context(int64_t T, const torch::Device& device) override;
  torch::Tensor weight;  // learned table, only with learned_table

 private:
  int64_t n_head_, head_size_;
  bool rope_, alibi_;
};

// ALiBi slopes m_h = 2^(-8(h+1)/H); bias_ij = -m_h (i - j).
torch::Tensor alibi_bias(int64_t n_head, int64_t T, const torch::Device& device);  // [H, T, T]

// Morlet positional encoding, exactly as published (SPEC.md section 2).
class MorletPositionImpl : public PositionEncodingImpl {
 public:
  explicit MorletPositionImpl(const ModelConfig& c);
  torch::Tensor input_table(int64_t T, const torch::Device& device) override;
  void report_params(LearnedParams& out) const override;
  void reset_parameters() override;

  // Effective (omega, sigma) after the clamps and the omega*sigma >= 5 projection.
  std::pair<torch::Tensor, torch::Tensor> effective_omega_sigma() const;

  torch::Tensor log_omega, log_sigma;  // [d/2] each
};

}  // namespace egm
