// MoPE: learned (log omega, log sigma) pairs, projected onto omega * sigma >= 5
// and omega <= 0.95 pi, give Gaussian-windowed cosine and sine position tables.
#include <cmath>

#include "model/position_encodings.h"

namespace egm {

// Constants of the published MoPE (SPEC.md section 2).
namespace {
constexpr double kAdmissibility = 5.0;      // omega * sigma >= 5
constexpr double kMaxOmegaFactor = 0.95;    // omega <= 0.95 pi
constexpr double kMinSigma = 1e-3;
constexpr double kEnvelopeEps = 1e-8;
}  // namespace

MorletPositionImpl::MorletPositionImpl(const ModelConfig& c) {
  const int64_t n = c.d_model / 2;
  log_omega = register_parameter("log_omega", torch::zeros({n}));
  log_sigma = register_parameter("log_sigma", torch::zeros({n}));
  reset_parameters();
}

void MorletPositionImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  const int64_t n = log_omega.size(0);
  // f_i = exp(linspace(log 1, log 0.99 pi, n)); omega = f, sigma = 5/f (omega*sigma = 5).
  torch::Tensor log_f = torch::linspace(0.0, std::log(0.99 * M_PI), n, torch::kFloat64);
  log_omega.copy_(log_f);
  log_sigma.copy_(std::log(kAdmissibility) - log_f);
}

std::pair<torch::Tensor, torch::Tensor> MorletPositionImpl::effective_omega_sigma() const {
  torch::Tensor omega = log_omega.exp().clamp_max(kMaxOmegaFactor * M_PI);
  torch::Tensor sigma = log_sigma.exp().clamp_min(kMinSigma);
  // Hard projection onto the admissible set: omega no longer depends on log_omega there.
  omega = torch::where(omega * sigma < kAdmissibility, kAdmissibility / sigma, omega);
  return {omega, sigma};
}

torch::Tensor MorletPositionImpl::input_table(int64_t T, const torch::Device& device) {
  auto [omega, sigma] = effective_omega_sigma();                                // [n]
  torch::Tensor b = torch::arange(T, torch::TensorOptions().dtype(torch::kFloat32).device(device)).unsqueeze(1);  // [T,1]
  torch::Tensor envelope = torch::exp(-(b * b) / (2.0 * sigma * sigma + kEnvelopeEps));  // [T, n]
  torch::Tensor phase = omega * b;                                                   // [T, n]
  // Interleave: PE[b, 2i] = cos * env, PE[b, 2i+1] = sin * env.
  return torch::stack({phase.cos() * envelope, phase.sin() * envelope}, -1).reshape({T, 2 * omega.size(0)});
}

void MorletPositionImpl::report_params(LearnedParams& out) const {
  torch::NoGradGuard no_grad;
  auto [omega, sigma] = effective_omega_sigma();
  omega = omega.to(torch::kCPU, torch::kFloat64).contiguous();
  sigma = sigma.to(torch::kCPU, torch::kFloat64).contiguous();
  for (int64_t i = 0; i < omega.size(0); ++i) {
    out.push_back({"mope", -1, i, "omega", omega[i].item<double>()});
    out.push_back({"mope", -1, i, "sigma", sigma[i].item<double>()});
  }
}

}  // namespace egm
