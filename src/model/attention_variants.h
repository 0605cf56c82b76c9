// The attention mechanisms of the model zoo (SPEC.md section 1).
#pragma once

#include "model/attention.h"
#include "model/energy_gate_functions.h"

namespace egm {

// softmax(q k^T / sqrt(head) + mask) v, with dropout on the probabilities.
class StandardAttentionImpl : public AttentionImpl {
 public:
  StandardAttentionImpl(const ModelConfig& config, int64_t layer);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;
};

// What every energy gate shares: one energy projection per head
// e[b,h,t] = w_h . x[b,t] + b_h, and a threshold tau_h and sharpness alpha_h.
class EnergyGateAttentionImpl : public AttentionImpl {
 public:
  EnergyGateAttentionImpl(const ModelConfig& config, int64_t layer);
  void report_params(LearnedParams& out) const override;
  void reset_parameters() override;

  torch::nn::Linear energy{nullptr};  // [H, d] with bias (the bias cancels in the z-score)
  torch::Tensor tau, alpha;           // [H] each

  // Gate probe (GPTImpl::gate_open_shares): while probe_gate is set, forward stores in
  // gate_open_share the share of gate values above 1/2 per head ([H], float64, CPU):
  // the keys the gate passes more than it blocks (alpha > 0: z_j > tau).
  bool probe_gate = false;
  torch::Tensor gate_open_share;

 protected:
  torch::Tensor energies(const torch::Tensor& x);  // [B, H, T]
};

// The published EGA: z-score of the energies over ALL T keys of the sequence,
// so a query's gate depends on keys after it (the paper's flaw, kept on purpose).
class EnergyGatedAttentionImpl : public EnergyGateAttentionImpl {
 public:
  using EnergyGateAttentionImpl::EnergyGateAttentionImpl;
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;
  // g[b,h,j] = sigmoid(alpha_h (z_j - tau_h)), z over the T axis: [B, H, T].
  torch::Tensor key_gate(const torch::Tensor& e) const;

 private:
  void record_open_share(const torch::Tensor& g);  // the gate probe, g [B, H, T]
};

// Causal EGA: query row i z-scores keys with the mean/std of keys j <= i only,
// giving a [B, H, T, T] gate; row T-1 equals the published gate.
class CausalEnergyGatedAttentionImpl : public EnergyGateAttentionImpl {
 public:
  using EnergyGateAttentionImpl::EnergyGateAttentionImpl;
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;
  // The gate's logits alpha (z_ij - tau) = a_i d_j + c_i: per query a, c, per key d ([B, H, T] each);
  // the gate is affine_pair_gate(a, c, d), [B, H, T(query), T(key)].
  using GateTerms = PrefixGateTerms;
  // As plain ops (the CPU kernels' and the plain-ops path's); the SDPA path's is egm::prefix_gate_terms.
  GateTerms prefix_gate_terms(const torch::Tensor& e) const;
};

}  // namespace egm
