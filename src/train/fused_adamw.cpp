// FusedAdamW: gradients clipped by their global norm, then one
// at::_fused_adamw_ call over the parameter lists of the trainer's AdamW state.
#include "train/fused_adamw.h"

namespace egm {

torch::Tensor clip_divisor(const std::vector<torch::Tensor>& grads, double max_norm) {
  // As clip_grad_norm_: total = ||stack(per-tensor norms)||, factor min(1, max_norm / (total + 1e-6)).
  std::vector<torch::Tensor> norms = at::_foreach_norm(grads, 2);
  torch::Tensor total = torch::stack(norms).norm(2);
  return total.add(1e-6).div_(max_norm).clamp_min_(1.0);
}

FusedAdamW::Lists FusedAdamW::prepare() {
  Lists l;
  auto& state = optimizer_.state();
  for (auto& group : optimizer_.param_groups())
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;  // as AdamW::step: no gradient, no step
      auto key = p.unsafeGetTensorImpl();
      auto it = state.find(key);
      if (it == state.end()) {
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state.emplace(key, std::move(s)).first;
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      auto& [step, host] = steps_[key];
      // Made again when the host count moved without us (a checkpoint loaded, a LibTorch step).
      if (!step.defined() || host != s.step())
        step = torch::full({}, static_cast<double>(s.step()), p.options().dtype(torch::kFloat32));
      host = s.step();
      l.params.push_back(p);
      l.grads.push_back(p.grad());
      l.exp_avgs.push_back(s.exp_avg());
      l.exp_avg_sqs.push_back(s.exp_avg_sq());
      l.steps.push_back(step);
    }
  // The kernel reads the step count; the caller (PyTorch's AdamW too) advances it first.
  if (!l.steps.empty()) at::_foreach_add_(l.steps, 1);
  return l;
}

void FusedAdamW::finish(const Lists& l) {
  if (&l != &last_) last_ = l;
  auto& state = optimizer_.state();
  for (const auto& p : l.params) {
    auto& s = static_cast<torch::optim::AdamWParamState&>(*state.at(p.unsafeGetTensorImpl()));
    s.step(s.step() + 1);  // the host copy the checkpoint saves
    steps_[p.unsafeGetTensorImpl()].second = s.step();
  }
}

template <typename Lr>
void FusedAdamW::fused_step(const Lr& lr, double clip) {
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(optimizer_.param_groups().front().options());
  torch::NoGradGuard no_grad;
  Lists l = prepare();
  if (l.params.empty()) return;
  std::optional<torch::Tensor> divisor;
  if (clip > 0) divisor = clip_divisor(l.grads, clip);
  at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, l.steps, lr,
                    std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(), /*amsgrad=*/false,
                    /*maximize=*/false, divisor, /*found_inf=*/std::nullopt);
  finish(l);
}

void FusedAdamW::step(double lr, double clip) { fused_step(lr, clip); }

void FusedAdamW::step(const torch::Tensor& lr, double clip) { fused_step(lr, clip); }

}  // namespace egm
