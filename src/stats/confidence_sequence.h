// Anytime-valid confidence sequences for the mean of paired per-seed
// contrasts (e.g. I_s = A_s + B_s - AB_s - base_s) with unknown variance:
// look after every seed, stop whenever, and the interval at the stopping
// time still covers the true mean with probability >= 1 - alpha. A fixed-n
// t interval looked at after every seed does not (peeking after each of 50
// seeds rejects a true zero about a quarter of the time; results/BENCHMARKS.md).
//
// The sequence is Wang & Ramdas's (2023) t-mixture: for a candidate mean mu0,
// the likelihood ratio of the scale-invariant statistic
// (y_1, ..., y_n) / |y_1|, y_i = x_i - mu0, mixing the standardised effect
// theta = (mu - mu0) / sigma over N(0, tau^2), is
//   M_n(mu0) = (1 + n tau^2)^(-1/2) * (1 - r_n)^(-n/2),
//   r_n = (sum y)^2 / ((n + 1/tau^2) * sum y^2),
// a nonnegative martingale with mean 1 under mu = mu0 whatever sigma is
// (M_1 = 1: one seed says nothing about a variance). Ville's inequality:
// P(exists n: M_n(mu) >= 1/alpha) <= alpha. Inverting in mu0 gives
//   C_n = mean_n +- sqrt(b (n + rho) v / (n - b (n + rho))),
//   rho = 1/tau^2, v = sum (x - mean)^2 / n, b = 1 - (alpha^2 / (1 + n tau^2))^(1/n),
// and the whole line while n <= b (n + rho) (too few seeds: with tau = 1 and
// alpha = 0.05, up to 4 seeds). src/stats/README.md says why this one and
// what it assumes (Gaussian contrasts; heavy tails checked by simulation).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace egm::stats {

struct TMixtureOptions {
  double alpha = 0.05;   // the sequence covers for all n at once with probability >= 1 - alpha
  // Prior sd of the standardised effect (mu - mu0) / sigma that the mixture
  // averages over: the sequence is tightest for effects of about this many
  // standard deviations (results/BENCHMARKS.md compares 0.5, 1, 2).
  double prior_sd = 1.0;
};
// "t-mixture (Gaussian mixture of the scale-invariant t likelihood ratio; Wang & Ramdas 2023)":
// the e-process safestats calls eGauss; not Lai's (1976) flat-mixture sequence.
const char* t_mixture_method_name();
// "alpha=0.025 prior_sd=1"
std::string t_mixture_params(const TMixtureOptions& options);

// ln M_n(mu0) for n values with mean `mean` and sum of squared deviations
// `ssd`. 0 (M = 1) when every value equals mu0 or n < 2. Throws ConfigError
// for n = 0, ssd < 0 or a bad option.
double t_mixture_log_e(std::size_t n, double mean, double ssd, double mu0, const TMixtureOptions& options);

// Radius of C_n around the mean (+infinity while the set is the whole line).
// Depends on the spread only, not on the mean.
double t_mixture_radius(std::size_t n, double ssd, const TMixtureOptions& options);

// The smallest n at which C_n can be bounded (independent of the data).
std::size_t t_mixture_first_bounded(const TMixtureOptions& options);

// One look: the sequence after the n-th value.
struct SequenceLook {
  std::size_t n = 0;
  double estimate = 0.0;    // the running mean
  double lower = 0.0;       // running intersection of C_1..C_n (what is reported and decided on)
  double upper = 0.0;       // +-infinity while unbounded
  double raw_lower = 0.0;   // C_n alone
  double raw_upper = 0.0;
  double log_e_zero = 0.0;  // ln M_n(0): the evidence against mean 0 at this look
  // Anytime-valid p-value of mean 0: min(1, 1 / max_{k <= n} M_k(0)).
  // Valid at any stopping time, so Holm may be applied to several of them.
  double p_anytime = 1.0;
  // Sign of the running mean at the look where M_k(0) peaked: the side of 0
  // that the sequence at level p_anytime excludes (0 while p_anytime = 1).
  int evidence_sign = 0;
  bool bounded() const;
  bool excludes_zero() const { return lower > 0.0 || upper < 0.0; }
};

// Adds values one at a time (Welford's update); current() is the look after
// the last one. No values: current().n = 0, the whole line.
class TMixtureSequence {
 public:
  explicit TMixtureSequence(TMixtureOptions options = {});
  // Throws ConfigError for a non-finite value.
  const SequenceLook& add(double value);
  const SequenceLook& current() const { return look_; }
  const TMixtureOptions& options() const { return options_; }

 private:
  TMixtureOptions options_;
  double mean_ = 0.0;
  double ssd_ = 0.0;
  double max_log_e_ = 0.0;
  SequenceLook look_;
};

// Every look over `values` in order (one per value).
std::vector<SequenceLook> t_mixture_sequence(const std::vector<double>& values, const TMixtureOptions& options = {});

// Several claims at once (each delta, the interaction).
enum class Adjustment {
  bonferroni,  // each claim's sequence at alpha / m (the default)
  holm,        // sequences at alpha / m; signs decided by Holm on the anytime p-values (rejects at least as much)
  none,        // each claim at alpha (no family-wise control)
};
const char* adjustment_name(Adjustment adjustment);
// "bonferroni" | "holm" | "none"; ConfigError otherwise.
Adjustment parse_adjustment(const std::string& text);
// The level each claim's sequence is computed at: alpha / m, or alpha for none.
double per_claim_alpha(double alpha, std::size_t claims, Adjustment adjustment);

enum class Decision {
  undecided,
  positive,  // the sequence lies above 0: the sign is known at level alpha
  negative,  // below 0
  narrow,    // contains 0 but is narrower than 2 x the half-width asked for
};
const char* decision_name(Decision decision);  // "undecided", "positive", "negative", "narrow"

// Each claim's decision at its current look. Bonferroni / none: from the
// sequence itself. Holm: a claim's sign is decided when its Holm-adjusted
// anytime p-value (over all the claims' current looks) is <= alpha; the
// sign is evidence_sign. half_width <= 0 (or NaN) never settles by width.
std::vector<Decision> decide(const std::vector<SequenceLook>& looks, double alpha, Adjustment adjustment,
                             double half_width);
bool settled(Decision decision);

}  // namespace egm::stats
