// The 4-scale complex Morlet filter bank shared by ega_morlet and the mq_*
// attentions (ABLATIONS.md, "The Morlet filter bank"). Per head h and scale s,
// a causal filter of length L_s in {3, 7, 15, 31}:
//   re_t = sum_{u<L_s} cos(omega u) exp(-u^2 / (2 sigma^2)) m_{t-u},  im_t: sin instead of cos,
// with omega, sigma learned in log space and clamped/projected as MoPE does.
//
// The bank is not a submodule: it registers log_omega0 and log_sigma on the
// attention that owns it, so the names read h.{i}.attn.log_omega0 as in the
// reference.
#pragma once

#include <torch/torch.h>

#include <array>
#include <string>
#include <utility>

#include "run/learned_param.h"

namespace egm {

class MorletFilterBank {
 public:
  static constexpr int64_t kScales = 4;
  static constexpr std::array<int64_t, kScales> kLengths = {3, 7, 15, 31};  // 2^(s+2) - 1
  static constexpr int64_t kMaxLength = 31;

  // Registers log_omega0 and log_sigma [H, 4] on `owner` and initialises them.
  MorletFilterBank(torch::nn::Module& owner, int64_t n_head);

  // log_omega0 = log(pi / L_s), log_sigma = log(5 L_s / pi): omega0 * sigma = 5.
  void reset_parameters();
  // omega = min(exp(log_omega0), 0.95 pi), sigma = max(exp(log_sigma), 1e-3),
  // then omega = 5 / sigma where omega * sigma < 5. Both [H, 4].
  std::pair<torch::Tensor, torch::Tensor> omega_sigma() const;
  // [H, 4, 2, 31]: (cos, sin)(omega u) * envelope at u = 0..30, zero for u >= L_s.
  torch::Tensor filters() const;

  struct Response {
    torch::Tensor re, im;  // [B, H, 4, T]
  };
  // m: [B, T], the channel mean of the block input.
  Response apply(const torch::Tensor& m) const;

  // Effective omega and sigma under `module`, index = head * 4 + scale.
  void report(LearnedParams& out, const std::string& module, int64_t layer) const;

  torch::Tensor log_omega0, log_sigma;  // [H, 4]
};

}  // namespace egm
