// The wavelet energy gates: ega_morlet (learned complex Morlet bank) and
// ega_db2 / ega_db4 (fixed Daubechies high-pass, dilated). Both filter the
// channel mean of the block input causally, z-score the 4 scales' energies
// over T (so, like EGA, the gate sees the future) and mix the 4 gates.
#include "model/ablation_attention.h"
#include "model/causal_filter.h"
#include "model/daubechies.h"

namespace egm {

MorletGatedAttentionImpl::MorletGatedAttentionImpl(const ModelConfig& config, int64_t layer)
    : ScaleMixedGateAttentionImpl(config, layer, MorletFilterBank::kScales, "ega_morlet"),
      bank(*this, config.n_head) {}

void MorletGatedAttentionImpl::reset_parameters() {
  ScaleMixedGateAttentionImpl::reset_parameters();
  bank.reset_parameters();
}

void MorletGatedAttentionImpl::report_params(LearnedParams& out) const {
  ScaleMixedGateAttentionImpl::report_params(out);
  bank.report(out, module_, layer_);
}

torch::Tensor MorletGatedAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  Heads h = project(x, ctx);
  MorletFilterBank::Response r = bank.apply(x.mean(-1));               // [B, H, 4, T] each
  torch::Tensor g = mixed_gate(r.re.square() + r.im.square());  // [B, H, T]
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);         // [B, H, T, T]
  return merge(key_gated_mix(P, g, h.v));
}

DaubechiesGatedAttentionImpl::DaubechiesGatedAttentionImpl(const ModelConfig& config, int64_t layer, int64_t taps)
    : ScaleMixedGateAttentionImpl(config, layer, /*n_scales=*/4, "ega_db" + std::to_string(taps / 2)) {
  filters = register_buffer("filters", daubechies_filter_bank(taps, /*n_scales=*/4));
}

torch::Tensor DaubechiesGatedAttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx) {
  Heads h = project(x, ctx);
  torch::Tensor y = causal_filter(x.mean(-1), filters);                // [B, 4, T]
  torch::Tensor g = mixed_gate(y.square().unsqueeze(1));  // same energies for every head: [B, H, T]
  torch::Tensor P = torch::softmax(scores(h, ctx), -1);   // [B, H, T, T]
  return merge(key_gated_mix(P, g, h.v));
}

}  // namespace egm
