// Multi-head causal self-attention, the shared part of every variant: the
// fused Q/K/V projection (heads batched: one [B,H,T,T] product, not one module
// per head), RoPE, the score bias, and the output projection. Variants
// override forward() to change how scores become mixing weights.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "config/run_config.h"
#include "model/attention_context.h"
#include "model/sdpa_backend.h"
#include "run/learned_param.h"

namespace egm {

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& config, int64_t layer);

  // x: [B, T, d], the block's ln_1 output. Returns [B, T, d].
  virtual torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) = 0;
  virtual void report_params(LearnedParams& out) const { (void)out; }
  // Sets the variant's own parameters (tau, alpha, ...) to their initial values.
  virtual void reset_parameters() {}
  // The SDPA backend this layer's last training-mode call ran on, and the backends that
  // refused that call (model.attention_path sdpa); nullopt when it has not called SDPA.
  const std::optional<SdpaResult>& last_sdpa() const { return last_sdpa_; }

  torch::nn::Linear c_attn{nullptr};  // [3d, d], no bias: rows Q | K | V, head-major within each
  torch::nn::Linear c_proj{nullptr};  // [d, d] with bias
  torch::nn::Dropout attn_dropout{nullptr};

 protected:
  struct Heads {
    torch::Tensor q, k, v;  // [B, H, T, head]
  };
  // Which way standard, EGA and causal EGA compute (model.attention_path, resolved by the
  // tensor's device): the same formula each way; tests/model/test_sdpa_attention.cpp.
  enum class Path { kernels, sdpa, eager };
  Path path_for(const torch::Tensor& x) const;
  // The CPU kernels apply (causal_kernels_apply) and the path is kernels.
  bool kernels_apply(const torch::Tensor& a, const torch::Tensor& b) const;
  // at::scaled_dot_product_attention: softmax(q k^T / sqrt(head) + causal mask + ALiBi
  // + extra_bias) dropout'd times v; extra_bias [B, H, T, T'] (undefined: none) is added to
  // the scores of keys, which may be given more than once (T' = a multiple of T). Through
  // run_sdpa (sdpa_backend.h): the backend is recorded, a refusal falls back to the next.
  torch::Tensor sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const AttentionContext& ctx, const torch::Tensor& extra_bias = {});

  Heads project(const torch::Tensor& x, const AttentionContext& ctx) { return split_heads(c_attn(x), ctx); }
  // c_attn's output [B, T, 3d] as q, k, v views (RoPE applied when ctx has it).
  Heads split_heads(const torch::Tensor& qkv, const AttentionContext& ctx);
  // q k^T / sqrt(head) + bias (causal mask, ALiBi): [B, H, T, T].
  torch::Tensor scores(const Heads& h, const AttentionContext& ctx) const;
  // [B, H, T, head] -> c_proj([B, T, d]).
  torch::Tensor merge(const torch::Tensor& y);

  // The mixing step, given the softmax probabilities P [B, H, T, T] (causal:
  // zero above the diagonal) and values v [B, H, T, head]; attention dropout
  // is applied to P here, before any gate, as published.
  // dropout(P) v:
  torch::Tensor mix(const torch::Tensor& P, const torch::Tensor& v);
  // A = dropout(P) with key columns gated by g [B, H, T] (one value per key)
  // and rows renormalised: sum_j A_ij g_j v_j / max(sum_j A_ij g_j, 1e-8).
  torch::Tensor key_gated_mix(const torch::Tensor& P, const torch::Tensor& g, const torch::Tensor& v);
  // The same with a gate per (query, key) pair, gate [B, H, T, T].
  torch::Tensor pair_gated_mix(const torch::Tensor& P, const torch::Tensor& gate, const torch::Tensor& v);
  // The same with gate_ij = sigmoid(a_i d_j + c_i) for a, c, d: [B, H, T]; on CPU the
  // gate is formed inside the mix kernel and never stored.
  torch::Tensor affine_pair_gated_mix(const torch::Tensor& P, const torch::Tensor& a, const torch::Tensor& c,
                                      const torch::Tensor& d, const torch::Tensor& v);

  ModelConfig config_;
  std::optional<SdpaResult> last_sdpa_;  // without its output (which the step owns)
  int64_t layer_;
  int64_t n_head_, head_size_;
  double scale_;
};

// [y | den | padding] -> y / max(den, 1e-8), den the column right after the first E
// (renormalise_by_column, energy_gate_functions.h: its backward written by hand).
torch::Tensor divide_by_column(const torch::Tensor& y_den, int64_t E);
// [v | columns...] padded with zero columns to a multiple of 8 (what CUDA's flash and
// memory-efficient SDPA kernels need of the head size).
torch::Tensor pad_to_multiple_of_8(const torch::Tensor& v);
// x [..., E] with zero columns appended up to `width` (>= E).
torch::Tensor pad_to_width(const torch::Tensor& x, int64_t width);

// sigmoid(a_i d_j + c_i) for a, c, d: [B, H, T] -> [B, H, T(query), T(key)].
torch::Tensor affine_pair_gate(const torch::Tensor& a, const torch::Tensor& c, const torch::Tensor& d);

// kind: one of attention_kinds() (config/variants.h).
std::shared_ptr<AttentionImpl> make_attention(const std::string& kind, const ModelConfig& config, int64_t layer);

}  // namespace egm
