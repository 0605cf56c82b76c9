// Monte-Carlo runs of the t-mixture sequence: the type-I error of looking after
// every seed under the null, and when it stops under an effect (Gaussian or skewed noise).
#include "stats/sequential_sim.h"

#include <algorithm>
#include <cmath>

#include "stats/distributions.h"
#include "stats/rng.h"
#include "util/error.h"

namespace egm::stats {

const char* noise_name(Noise noise) {
  switch (noise) {
    case Noise::gaussian: return "gaussian";
    case Noise::student_t3: return "t(3)";
    case Noise::exponential: return "exponential";
    case Noise::lognormal: return "lognormal";
    case Noise::rare_outlier: return "rare outlier";
  }
  return "?";
}

double standard_normal(std::mt19937_64& rng) {
  // Box-Muller, one of the pair (simple and the same on every platform).
  double u1 = uniform01(rng);
  // uniform01 can return 0, and log(0) would make the draw infinite: redraw.
  while (u1 <= 0.0) u1 = uniform01(rng);
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double draw_noise(std::mt19937_64& rng, Noise noise) {
  if (noise == Noise::exponential) {
    double u = uniform01(rng);
    while (u <= 0.0) u = uniform01(rng);
    // Exponential(1) less its mean: skewed noise with mean 0, like the other kinds.
    return -std::log(u) - 1.0;
  }
  const double z = standard_normal(rng);
  if (noise == Noise::gaussian) return z;
  // E[exp(z)] = exp(1/2), so subtracting it centres the lognormal at 0.
  if (noise == Noise::lognormal) return std::exp(z) - std::exp(0.5);
  // A +10 outlier with probability 0.05 adds 0.5 to the mean, which is taken off again.
  if (noise == Noise::rare_outlier) return z + (uniform01(rng) < 0.05 ? 10.0 : 0.0) - 0.5;
  // Student t(3): z over sqrt(chi^2_3 / 3), the chi-square from three more normals.
  double chi2 = 0.0;
  for (int k = 0; k < 3; ++k) {
    const double g = standard_normal(rng);
    chi2 += g * g;
  }
  return z / std::sqrt(chi2 / 3.0);
}

double NullSimulation::standard_error(double p) const {
  return sequences == 0 ? 0.0 : std::sqrt(p * (1.0 - p) / static_cast<double>(sequences));
}

NullSimulation simulate_null(Noise noise, std::size_t sequences, std::size_t max_n, const TMixtureOptions& options,
                             std::uint64_t seed, double true_mean, double scale) {
  EGM_REQUIRE(sequences > 0 && max_n >= 2, ConfigError, "simulate_null needs sequences > 0 and max_n >= 2");
  // What the sequence is compared with: a fixed-n t interval at level 1 - alpha, looked at after every seed.
  std::vector<double> t_crit(max_n + 1, 0.0);
  for (std::size_t n = 2; n <= max_n; ++n) t_crit[n] = t_critical(1.0 - options.alpha, static_cast<double>(n - 1));
  std::mt19937_64 rng(seed);
  std::size_t cs_hits = 0, naive_hits = 0;
  for (std::size_t s = 0; s < sequences; ++s) {
    TMixtureSequence sequence(options);
    bool cs_out = false, naive_out = false;
    double mean = 0.0, ssd = 0.0;
    for (std::size_t n = 1; n <= max_n; ++n) {
      const double x = true_mean + scale * draw_noise(rng, noise);
      const SequenceLook& look = sequence.add(x);
      // Ever excluding the true mean, at any look, is the error that peeking risks.
      if (look.lower > true_mean || look.upper < true_mean) cs_out = true;
      const double delta = x - mean;
      mean += delta / static_cast<double>(n);
      ssd += delta * (x - mean);
      // The naive interval from Welford's running mean and ssd (divided by n - 1).
      if (n >= 2) {
        const double se = std::sqrt(ssd / static_cast<double>(n - 1) / static_cast<double>(n));
        if (std::fabs(mean - true_mean) > t_crit[n] * se) naive_out = true;
      }
    }
    cs_hits += cs_out;
    naive_hits += naive_out;
  }
  NullSimulation out;
  out.sequences = sequences;
  out.max_n = max_n;
  out.true_mean = true_mean;
  out.cs_ever_excluded = static_cast<double>(cs_hits) / static_cast<double>(sequences);
  out.naive_ever_excluded = static_cast<double>(naive_hits) / static_cast<double>(sequences);
  return out;
}

std::size_t StoppingSimulation::quantile(double p) const {
  std::vector<std::size_t> sorted;
  sorted.reserve(stop_n.size());
  // Undecided sequences sort last (beyond max_n).
  for (std::size_t n : stop_n) sorted.push_back(n == 0 ? max_n + 1 : n);
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty()) return 0;
  // Lower empirical quantile: the smallest n by which a share >= p has decided.
  std::size_t index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  index = std::clamp<std::size_t>(index, 1, sorted.size()) - 1;
  return sorted[index] > max_n ? 0 : sorted[index];
}

StoppingSimulation simulate_stopping(double effect_sd, std::size_t sequences, std::size_t max_n,
                                     const TMixtureOptions& options, std::uint64_t seed) {
  EGM_REQUIRE(sequences > 0 && max_n >= 2, ConfigError, "simulate_stopping needs sequences > 0 and max_n >= 2");
  std::mt19937_64 rng(seed);
  StoppingSimulation out;
  out.effect_sd = effect_sd;
  out.sequences = sequences;
  out.max_n = max_n;
  out.stop_n.assign(sequences, 0);
  std::size_t decided = 0, wrong = 0;
  for (std::size_t s = 0; s < sequences; ++s) {
    TMixtureSequence sequence(options);
    for (std::size_t n = 1; n <= max_n; ++n) {
      const SequenceLook& look = sequence.add(effect_sd + standard_normal(rng));
      // Stop at the first look whose interval excludes 0, as a sequential sweep would.
      if (look.excludes_zero()) {
        out.stop_n[s] = n;
        ++decided;
        if ((look.lower > 0.0) != (effect_sd > 0.0)) ++wrong;
        break;
      }
    }
  }
  out.decided = static_cast<double>(decided) / static_cast<double>(sequences);
  out.wrong_sign = static_cast<double>(wrong) / static_cast<double>(sequences);
  return out;
}

}  // namespace egm::stats
