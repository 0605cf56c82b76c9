// Dropout whose keep/drop decision for element i is a pure function of
// (seed, i): SplitMix64 over the element index, with one 64-bit seed drawn
// per call from the device's default generator.
//
// Why: LibTorch 1.13's CPU dropout fills its mask with bernoulli_, one
// serial Mersenne-Twister draw per element; at the paper preset that was
// ~13% of a training step, on one core. Here the mask is computed in
// parallel, never stored (backward recomputes it from the seed), and can be
// applied inside other kernels (the attention mix) without materialising it.
// Same distribution (keep with probability 1 - p, scale 1/(1 - p)); runs stay
// deterministic and resume bitwise, because the seed comes from the default
// generator, which checkpoints save. The masks differ from bernoulli_'s.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace egm {

class DropoutMask {
 public:
  // No dropout: every factor is 1.
  DropoutMask() = default;
  // Drop probability p in [0, 1]; draws the seed from the default CPU generator.
  static DropoutMask draw(double p);
  // The mask of a known seed (backward passes rebuild the forward's mask).
  DropoutMask(double p, uint64_t seed);

  bool active() const { return active_; }
  uint64_t seed() const { return seed_; }
  double p() const { return p_; }

  // Forward passes keep the mask in their autograd context (p and seed, not the mask);
  // backward passes rebuild it from there.
  void save_to(torch::autograd::AutogradContext* ctx) const;
  static DropoutMask saved_in(torch::autograd::AutogradContext* ctx);

  // out[j] = x[j] * factor(start + j), factor = scale when kept else 0, for
  // elements [start, start + n) of the tensor's contiguous index space.
  void apply(int64_t start, int64_t n, const float* x, float* out) const;
  // The factors themselves for the same elements: f[j] = factor(start + j), so that
  // x[j] * f[j] is exactly apply's out[j]. For a kernel that applies one mask twice.
  void factors(int64_t start, int64_t n, float* f) const;

 private:
  bool active_ = false;
  double p_ = 0.0;
  uint64_t seed_ = 0;
  uint64_t threshold_ = 0;  // keep when the element's 32 random bits are below this
  float scale_ = 1.0f;
};

// A forward pass's mask (an attention kernel's dropout): drawn in training only (no
// dropout in eval), kept in its autograd context for the backward pass.
DropoutMask draw_and_save_mask(torch::autograd::AutogradContext* ctx, double p, bool training);

// Dropout with the mask above: CPU float32 tensors in training mode; anything
// else (CUDA, other dtypes) goes to torch::dropout.
torch::Tensor counter_dropout(const torch::Tensor& x, double p, bool training);

// The same, with the probability and train/eval mode of a Dropout module.
torch::Tensor dropout(const torch::Tensor& x, const torch::nn::Dropout& module);

}  // namespace egm
