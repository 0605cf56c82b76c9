// The causality audit: each position's logits recomputed from its prefix alone
// and compared with the full forward's (a variant that reads ahead differs).
#include "model/causality.h"

#include <algorithm>

namespace egm {

torch::Tensor prefix_logits(GPTImpl& model, const torch::Tensor& idx) {
  const int64_t T = idx.size(1);
  std::vector<torch::Tensor> rows;
  rows.reserve(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) {
    // T forwards of growing length: slow (O(T^2) work), but each position sees nothing after it by construction.
    torch::Tensor logits = model.forward(idx.narrow(1, 0, i + 1));  // [B, i+1, V]
    rows.push_back(logits.select(1, i));                             // [B, V]
  }
  return torch::stack(rows, 1);  // [B, T, V]
}

CausalityReport audit_causality(GPTImpl& model, const torch::Tensor& idx) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  // Eval mode: dropout would make the two forwards differ for a causal model too.
  model.eval();
  torch::Tensor full = model.forward(idx);
  torch::Tensor prefix = prefix_logits(model, idx);
  model.train(was_training);
  // The worst difference over the batch and the vocabulary, per position; contiguous so data_ptr reads it in order.
  torch::Tensor per_pos = (full - prefix).abs().amax({0, 2}).to(torch::kFloat64).contiguous();  // [T]
  CausalityReport report;
  report.per_position.assign(per_pos.data_ptr<double>(), per_pos.data_ptr<double>() + per_pos.numel());
  auto worst = std::max_element(report.per_position.begin(), report.per_position.end());
  report.max_abs_diff = *worst;
  report.worst_position = worst - report.per_position.begin();
  return report;
}

}  // namespace egm
