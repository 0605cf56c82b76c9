// Dynamic loss scaling for fp16 autocast (LibTorch's C++ API has no
// GradScaler): multiply the loss by a scale, divide the gradients back, skip
// the step and halve the scale on inf/NaN, double it after a run of good steps.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace egm {

class LossScaler {
 public:
  explicit LossScaler(bool enabled, double initial = 65536.0, int64_t growth_interval = 2000)
      : enabled_(enabled), scale_(initial), growth_interval_(growth_interval) {}

  torch::Tensor scale(const torch::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }

  // Unscales gradients in place; returns false (and lowers the scale) when
  // any is not finite, in which case the caller skips the optimiser step.
  bool unscale_and_check(const std::vector<torch::Tensor>& params) {
    if (!enabled_) return true;
    bool finite = true;
    for (const auto& p : params) {
      if (!p.grad().defined()) continue;
      p.grad().div_(scale_);
      if (finite && !torch::isfinite(p.grad()).all().item<bool>()) finite = false;
    }
    if (!finite) {
      scale_ /= 2.0;
      good_steps_ = 0;
      return false;
    }
    if (++good_steps_ >= growth_interval_) {
      scale_ *= 2.0;
      good_steps_ = 0;
    }
    return true;
  }

 private:
  bool enabled_;
  double scale_;
  int64_t growth_interval_;
  int64_t good_steps_ = 0;
};

}  // namespace egm
