// Each position sees only its own prefix: the logits at position i computed
// from x[0..i] alone. Used by the causality audit (does a variant read the
// future?) and the autoregressive evaluation (what is the loss when it can't?).
#pragma once

#include <torch/torch.h>

#include "model/gpt.h"

namespace egm {

// [B, T, V]: row i is the last-position logits of model(idx[:, :i+1]). T forwards.
torch::Tensor prefix_logits(GPTImpl& model, const torch::Tensor& idx);

struct CausalityReport {
  double max_abs_diff = 0.0;        // over all positions
  int64_t worst_position = -1;      // position of the largest difference
  std::vector<double> per_position; // max |full - prefix| at each position
  bool causal(double tolerance) const { return max_abs_diff <= tolerance; }
};

// Compares full-window logits with prefix-only logits (model in eval mode, no grad).
CausalityReport audit_causality(GPTImpl& model, const torch::Tensor& idx);

}  // namespace egm
