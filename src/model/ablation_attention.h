// The paper's ablation attentions (SPEC.md section 5), exactly as defined in
// src/model/ABLATIONS.md, which the PyTorch reference implements too. All
// batch the heads: one [B, H, T, T] product, per-head parameters as [H, ...].
#pragma once

#include <string>

#include "model/attention.h"
#include "model/morlet_filter_bank.h"

namespace egm {

// (e - mean_T e) / sqrt(max(var_T e, 1e-16)) over the last (T) axis with the
// population variance; 0 when T = 1. Finite gradient everywhere.
torch::Tensor zscore_over_time(const torch::Tensor& e);

// conv: lagged cross-correlation scores s_ij = sum_{l=-L..L} w[h,l] P_{i,j+l}
// with P_im = q_i.k_m / sqrt(head) and P_im = 0 for m > i (never reads a key
// after the query). lag_weight starts one-hot at lag 0: standard attention.
class ConvAttentionImpl : public AttentionImpl {
 public:
  ConvAttentionImpl(const ModelConfig& config, int64_t layer);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;
  void report_params(LearnedParams& out) const override;
  void reset_parameters() override;
  // P: [B, H, T, T] with future keys already 0. Returns s: [B, H, T, T].
  torch::Tensor lagged_scores(const torch::Tensor& P) const;

  torch::Tensor lag_weight;  // [H, 2L+1], entry (h, l+L) = w_{h,l}

 private:
  int64_t max_lag_;
};

// What every multi-scale gate shares: per head and scale s a threshold tau,
// a sharpness alpha and a mixing logit scale_w, and
//   g[b,h,j] = sum_s softmax_s(scale_w[h])_s * sigmoid(alpha[h,s] (z_{b,h,s,j} - tau[h,s])),
// applied as EGA applies its gate (dropout first, gate key columns, renormalise rows).
class ScaleMixedGateAttentionImpl : public AttentionImpl {
 public:
  // module: the name under which report_params files tau/alpha/mix.
  ScaleMixedGateAttentionImpl(const ModelConfig& config, int64_t layer, int64_t n_scales, std::string module);
  void report_params(LearnedParams& out) const override;
  // tau = ega_tau_init, alpha = ega_alpha_init, scale_w = 0 (uniform mix).
  void reset_parameters() override;
  // energy: [B, H or 1, S, T] (z-scored here over T). Returns g: [B, H, T].
  torch::Tensor mixed_gate(const torch::Tensor& energy) const;

  torch::Tensor tau, alpha, scale_w;  // [H, S]

 protected:
  // Gates are applied with key_gated_mix (attention.h): dropout, gate key columns, renormalise.
  std::string module_;
};

// ega2, ega4: n energy projections per head, energy row h*n+s, one gate each, mixed.
class MultiEnergyGatedAttentionImpl : public ScaleMixedGateAttentionImpl {
 public:
  MultiEnergyGatedAttentionImpl(const ModelConfig& config, int64_t layer, int64_t n_projections);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;

  torch::nn::Linear energy{nullptr};  // [H*n, d] with bias (cancelled by the z-score)

 private:
  int64_t n_projections_;
};

// ega_morlet: the gate energies are the 4 learned Morlet scales' |re + i im|^2
// of the block input's channel mean.
class MorletGatedAttentionImpl : public ScaleMixedGateAttentionImpl {
 public:
  MorletGatedAttentionImpl(const ModelConfig& config, int64_t layer);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;
  void report_params(LearnedParams& out) const override;
  void reset_parameters() override;

  MorletFilterBank bank;
};

// ega_db2, ega_db4: as ega_morlet with the fixed Daubechies high-pass filter
// dilated to 4 scales (same for every head): energies y_s^2. No filter parameters.
class DaubechiesGatedAttentionImpl : public ScaleMixedGateAttentionImpl {
 public:
  // taps: 4 (db2) or 8 (db4).
  DaubechiesGatedAttentionImpl(const ModelConfig& config, int64_t layer, int64_t taps);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;

  torch::Tensor filters;  // buffer [4, K']: the dilated high-pass filters
};

// mq_e, mq_ep, mq_ef, mq_epf: scores l_sim q.k/sqrt(head) plus per-key terms
// from one Morlet bank per head (energy E, phase coherence cos(phi), flux F),
// then the ega_morlet gate of the same bank.
class MultiQuantityAttentionImpl : public ScaleMixedGateAttentionImpl {
 public:
  MultiQuantityAttentionImpl(const ModelConfig& config, int64_t layer, bool use_phase, bool use_flux);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx) override;
  void report_params(LearnedParams& out) const override;
  void reset_parameters() override;
  // The per-key score terms l_E Ez_j (+ l_phi cos(phi_j)) (+ l_F Fz_j): [B, H, T].
  torch::Tensor key_terms(const MorletFilterBank::Response& r, const torch::Tensor& energy) const;

  MorletFilterBank bank;
  torch::Tensor l_sim, l_E, l_phi, l_F;  // [H]; l_phi / l_F undefined when the term is off

 private:
  bool use_phase_, use_flux_;
};

}  // namespace egm
