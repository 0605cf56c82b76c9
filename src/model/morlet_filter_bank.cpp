// The learned Morlet filter bank of ega_morlet and mq_*: its parameters, the
// causal complex filters, their response to a signal, and the parameters reported.
#include "model/morlet_filter_bank.h"

#include <cmath>

#include "model/causal_filter.h"

namespace egm {

// The same constants as MoPE (SPEC.md section 2).
namespace {
constexpr double kAdmissibility = 5.0;    // omega * sigma >= 5
constexpr double kMaxOmegaFactor = 0.95;  // omega <= 0.95 pi
constexpr double kMinSigma = 1e-3;
}  // namespace

MorletFilterBank::MorletFilterBank(torch::nn::Module& owner, int64_t n_head) {
  log_omega0 = owner.register_parameter("log_omega0", torch::zeros({n_head, kScales}));
  log_sigma = owner.register_parameter("log_sigma", torch::zeros({n_head, kScales}));
  reset_parameters();
}

void MorletFilterBank::reset_parameters() {
  torch::NoGradGuard no_grad;
  for (int64_t s = 0; s < kScales; ++s) {
    const double length = static_cast<double>(kLengths[static_cast<size_t>(s)]);
    log_omega0.select(1, s).fill_(std::log(M_PI / length));
    log_sigma.select(1, s).fill_(std::log(kAdmissibility * length / M_PI));
  }
}

std::pair<torch::Tensor, torch::Tensor> MorletFilterBank::omega_sigma() const {
  torch::Tensor omega = log_omega0.exp().clamp_max(kMaxOmegaFactor * M_PI);
  torch::Tensor sigma = log_sigma.exp().clamp_min(kMinSigma);
  // MoPE's hard projection onto omega * sigma >= 5 (omega then ignores log_omega0).
  omega = torch::where(omega * sigma < kAdmissibility, kAdmissibility / sigma, omega);
  return {omega, sigma};
}

torch::Tensor MorletFilterBank::filters() const {
  auto [omega, sigma] = omega_sigma();                                             // [H, S]
  torch::Tensor u = torch::arange(kMaxLength, omega.options()).view({1, 1, -1});   // [1, 1, K]
  // L_s = 2^(s+2) - 1 = 3, 7, 15, 31, made on the device (no host copy per forward).
  torch::Tensor lengths = (torch::arange(kScales, omega.options()) + 2).exp2().sub(1).view({1, -1, 1});  // [1, S, 1]
  torch::Tensor support = (u < lengths).to(omega.scalar_type());                   // [1, S, K]: u < L_s
  sigma = sigma.unsqueeze(-1);                                                     // [H, S, 1]
  torch::Tensor envelope = torch::exp(-(u * u) / (2.0 * sigma * sigma)) * support;  // [H, S, K]
  torch::Tensor phase = omega.unsqueeze(-1) * u;                                   // [H, S, K]
  return torch::stack({phase.cos() * envelope, phase.sin() * envelope}, 2);         // [H, S, 2, K]
}

MorletFilterBank::Response MorletFilterBank::apply(const torch::Tensor& m) const {
  const int64_t B = m.size(0), T = m.size(1), H = log_omega0.size(0);
  torch::Tensor y = causal_filter(m, filters().reshape({H * kScales * 2, kMaxLength}));  // [B, H*S*2, T]
  y = y.view({B, H, kScales, 2, T});
  return {y.select(3, 0), y.select(3, 1)};
}

void MorletFilterBank::report(LearnedParams& out, const std::string& module, int64_t layer) const {
  torch::NoGradGuard no_grad;
  auto [omega, sigma] = omega_sigma();
  omega = omega.to(torch::kCPU, torch::kFloat64).contiguous();
  sigma = sigma.to(torch::kCPU, torch::kFloat64).contiguous();
  for (int64_t h = 0; h < omega.size(0); ++h) {
    for (int64_t s = 0; s < kScales; ++s) {
      out.push_back({module, layer, h * kScales + s, "omega", omega[h][s].item<double>()});
      out.push_back({module, layer, h * kScales + s, "sigma", sigma[h][s].item<double>()});
    }
  }
}

}  // namespace egm
