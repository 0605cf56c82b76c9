// Monte-Carlo checks of the t-mixture confidence sequence (confidence_sequence.h),
// shared by the CI tests (tests/stats/test_confidence_sequence.cpp, 2,000
// sequences) and the benchmark (tests/bench/sequential_bench.cpp, >= 20,000):
//  - under the null, looking after every seed up to max_n: how often the
//    sequence ever excludes the true mean, beside the naive t interval
//    recomputed at every look (which peeks its way past alpha);
//  - under an alternative: the seeds until the sequence excludes 0.
// Draws are platform-independent (Box-Muller on rng.h's uniform01), so a
// seed gives the same numbers everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "stats/confidence_sequence.h"

namespace egm::stats {

enum class Noise {
  gaussian,      // N(0, 1)
  student_t3,    // Student t with 3 df (variance 3; heavy tails, finite variance)
  // Skewed, every one centred on mean 0 (the null holds exactly):
  exponential,   // Exp(1) - 1 (skewness 2)
  lognormal,     // exp(Z) - exp(1/2), Z ~ N(0, 1) (skewness about 6.2)
  rare_outlier,  // N(0, 1), and with probability 1/20 a seed 10 higher; minus 0.5 (a diverging seed now and then)
};
const char* noise_name(Noise noise);
double standard_normal(std::mt19937_64& rng);
double draw_noise(std::mt19937_64& rng, Noise noise);

struct NullSimulation {
  std::size_t sequences = 0;
  std::size_t max_n = 0;
  double true_mean = 0.0;
  // Share of sequences whose running intersection ever excluded the true
  // mean at some look n = 1..max_n (1 - simultaneous coverage).
  double cs_ever_excluded = 0.0;
  // Share in which the fixed-n t interval at level 1 - alpha, recomputed at
  // every look n = 2..max_n, ever excluded the true mean.
  double naive_ever_excluded = 0.0;
  // Monte-Carlo standard error of an estimated share p: sqrt(p (1 - p) / sequences).
  double standard_error(double p) const;
};

// Values true_mean + scale * noise.
NullSimulation simulate_null(Noise noise, std::size_t sequences, std::size_t max_n, const TMixtureOptions& options,
                             std::uint64_t seed, double true_mean = 0.0, double scale = 1.0);

struct StoppingSimulation {
  double effect_sd = 0.0;
  std::size_t sequences = 0;
  std::size_t max_n = 0;
  std::vector<std::size_t> stop_n;  // per sequence: the first n at which the sequence excluded 0; 0 = not by max_n
  double decided = 0.0;             // share with a decision by max_n
  double wrong_sign = 0.0;          // share decided with the wrong sign
  // Quantile p of the stopping n over all sequences (undecided ones count as
  // beyond max_n: 0 when the quantile falls among them).
  std::size_t quantile(double p) const;
};

// Gaussian contrasts with mean effect_sd and sd 1, looked at after every seed.
StoppingSimulation simulate_stopping(double effect_sd, std::size_t sequences, std::size_t max_n,
                                     const TMixtureOptions& options, std::uint64_t seed);

}  // namespace egm::stats
