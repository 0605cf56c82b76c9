// AdamW's step in one fused call: at::_fused_adamw_ over every parameter (one
// kernel launch per step on CUDA instead of ~9 per parameter), on the state of
// the LibTorch torch::optim::AdamW the trainer already owns, so checkpoints,
// resumes and the per-parameter state are the same on either path. Global-norm
// clipping is folded into the kernel's grad_scale and computed on the device
// (foreach norms), so the step never waits for the host.
#pragma once

#include <torch/torch.h>

#include <unordered_map>
#include <utility>
#include <vector>

namespace egm {

// What clip_grad_norm_(grads, max_norm) multiplies the gradients by, as the
// divisor the fused kernel takes: max(1, (||grads||_2 + 1e-6) / max_norm), a 0-d
// tensor on the gradients' device, never read back to the host.
torch::Tensor clip_divisor(const std::vector<torch::Tensor>& grads, double max_norm);

class FusedAdamW {
 public:
  explicit FusedAdamW(torch::optim::AdamW& optimizer) : optimizer_(optimizer) {}

  // One AdamW step at learning rate `lr` over the parameters that have a gradient
  // (as torch::optim::AdamW::step). clip > 0: the gradients are first scaled to a
  // global norm of at most clip (as clip_grad_norm_), in place like it.
  void step(double lr, double clip);
  // The same with lr a 0-d float tensor on the parameters' device, read by the kernel:
  // a step that CUDA graphs can capture once and replay with another lr.
  void step(const torch::Tensor& lr, double clip);
  // After a replay of a captured step (train/cuda_graph.h): the host step counts
  // advance as that step's did, without launching anything.
  void advance_host_steps() { finish(last_); }

 private:
  struct Lists {
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
  };
  Lists prepare();
  void finish(const Lists& lists);
  // Both steps: the lr as a number or as a device tensor (at::_fused_adamw_ takes either).
  template <typename Lr>
  void fused_step(const Lr& lr, double clip);

  torch::optim::AdamW& optimizer_;
  Lists last_;  // the lists of the last step
  // Each parameter's step count as the float tensor the kernel reads, with the host count it was made from.
  std::unordered_map<c10::TensorImpl*, std::pair<torch::Tensor, int64_t>> steps_;
};

}  // namespace egm
