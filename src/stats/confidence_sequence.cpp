// The t-mixture confidence sequence: its log e-value and radius at n seeds, the
// first n it can bound, and TMixtureSequence, which adds one seed's contrast per look.
#include "stats/confidence_sequence.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "stats/multiple.h"
#include "util/enum_names.h"
#include "util/error.h"

namespace egm::stats {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Checked at every entry point: alpha feeds log(alpha) and prior_sd feeds rho = 1 / tau^2 below.
void require_options(const TMixtureOptions& o) {
  EGM_REQUIRE(o.alpha > 0.0 && o.alpha < 1.0, ConfigError, "alpha must lie strictly between 0 and 1, got {}",
              o.alpha);
  EGM_REQUIRE(std::isfinite(o.prior_sd) && o.prior_sd > 0.0, ConfigError,
              "the t-mixture's prior sd must be finite and positive, got {}", o.prior_sd);
}

// b (n + rho) of the header, and n: the set is bounded iff n > b (n + rho).
struct Threshold {
  double scaled_b;  // b (n + rho)
  double n;
};
Threshold threshold(std::size_t n, const TMixtureOptions& o) {
  const double nd = static_cast<double>(n);
  const double tau2 = o.prior_sd * o.prior_sd;
  // b = 1 - (alpha^2 / (1 + n tau^2))^(1/n), without cancellation for large n.
  const double b = -std::expm1((2.0 * std::log(o.alpha) - std::log1p(nd * tau2)) / nd);
  // rho = 1 / tau^2 (the header's C_n).
  return {b * (nd + 1.0 / tau2), nd};
}

}  // namespace

const char* t_mixture_method_name() { return "t-mixture (Gaussian mixture of the scale-invariant t likelihood ratio; Wang & Ramdas 2023)"; }

std::string t_mixture_params(const TMixtureOptions& options) {
  return fmt::format("alpha={:g} prior_sd={:g}", options.alpha, options.prior_sd);
}

double t_mixture_log_e(std::size_t n, double mean, double ssd, double mu0, const TMixtureOptions& options) {
  require_options(options);
  EGM_REQUIRE(n > 0, ConfigError, "the t-mixture needs at least one value");
  EGM_REQUIRE(ssd >= 0.0 && std::isfinite(ssd) && std::isfinite(mean) && std::isfinite(mu0), ConfigError,
              "the t-mixture needs a finite mean and sum of squares, got mean {} ssd {}", mean, ssd);
  // M_1 = 1 (header): one seed says nothing about the variance.
  if (n < 2) return 0.0;
  const double nd = static_cast<double>(n);
  const double tau2 = options.prior_sd * options.prior_sd;
  const double d = mean - mu0;
  // v divides by n: with sum y^2 = n (v + d^2) and sum y = n d, the header's r_n becomes r below.
  const double v = ssd / nd;
  if (v + d * d == 0.0) return 0.0;  // every value equals mu0: no evidence either way
  // r = n d^2 / ((n + rho) (v + d^2)) < 1 always (n / (n + rho) < 1).
  const double r = nd * d * d / ((nd + 1.0 / tau2) * (v + d * d));
  // ln M_n = -ln(1 + n tau^2) / 2 - n ln(1 - r) / 2; log1p keeps precision while r is small.
  return -0.5 * std::log1p(nd * tau2) - 0.5 * nd * std::log1p(-r);
}

double t_mixture_radius(std::size_t n, double ssd, const TMixtureOptions& options) {
  require_options(options);
  EGM_REQUIRE(ssd >= 0.0 && std::isfinite(ssd), ConfigError, "sum of squares must be finite and >= 0, got {}", ssd);
  // Fewer than 2 seeds: no spread to scale by, so the set is the whole line.
  if (n < 2) return kInf;
  const Threshold t = threshold(n, options);
  // n <= b (n + rho): too few seeds for this alpha and prior; the set is still the whole line.
  if (t.n <= t.scaled_b) return kInf;
  // The header's radius sqrt(b (n + rho) v / (n - b (n + rho))), v = ssd / n.
  return std::sqrt(t.scaled_b * (ssd / t.n) / (t.n - t.scaled_b));
}

std::size_t t_mixture_first_bounded(const TMixtureOptions& options) {
  require_options(options);
  // n - b (n + rho) grows with n (b falls like log(n) / n); search upward.
  // Found for every alpha in (0, 1): b (n + rho) grows only like log n. The cap guards the loop; 0 means it was hit.
  for (std::size_t n = 2; n < 100000000; ++n) {
    const Threshold t = threshold(n, options);
    if (t.n > t.scaled_b) return n;
  }
  return 0;
}

bool SequenceLook::bounded() const { return std::isfinite(lower) && std::isfinite(upper); }

TMixtureSequence::TMixtureSequence(TMixtureOptions options) : options_(options) {
  require_options(options_);
  // No values yet: the whole line, so the first intersection in add() is the first set itself.
  look_.lower = look_.raw_lower = -kInf;
  look_.upper = look_.raw_upper = kInf;
}

const SequenceLook& TMixtureSequence::add(double value) {
  EGM_REQUIRE(std::isfinite(value), ConfigError, "a contrast of the sequence is not finite: {}", value);
  SequenceLook next = look_;
  next.n = look_.n + 1;
  // Welford's update of the mean and the sum of squared deviations: one pass, no cancellation.
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(next.n);
  ssd_ += delta * (value - mean_);
  // Rounding can leave ssd a hair below 0 when values repeat; the radius needs ssd >= 0.
  if (ssd_ < 0.0) ssd_ = 0.0;
  next.estimate = mean_;
  const double radius = t_mixture_radius(next.n, ssd_, options_);
  next.raw_lower = mean_ - radius;
  next.raw_upper = mean_ + radius;
  // The running intersection is as valid as each set (all cover at once);
  // when rounding makes it empty, the newest set is kept.
  const double lo = std::max(look_.lower, next.raw_lower);
  const double hi = std::min(look_.upper, next.raw_upper);
  if (lo <= hi) {
    next.lower = lo;
    next.upper = hi;
  } else {
    next.lower = next.raw_lower;
    next.upper = next.raw_upper;
  }
  // The evidence against mean 0; its running maximum over the looks gives p_anytime = min(1, 1 / max M_k(0)).
  next.log_e_zero = t_mixture_log_e(next.n, mean_, ssd_, 0.0, options_);
  if (next.log_e_zero > max_log_e_) {
    max_log_e_ = next.log_e_zero;
    // The sign is taken at the peak, so it is the side of 0 that p_anytime speaks for.
    next.evidence_sign = mean_ > 0.0 ? 1 : (mean_ < 0.0 ? -1 : 0);
  }
  next.p_anytime = std::min(1.0, std::exp(-max_log_e_));
  look_ = next;
  return look_;
}

std::vector<SequenceLook> t_mixture_sequence(const std::vector<double>& values, const TMixtureOptions& options) {
  TMixtureSequence sequence(options);
  std::vector<SequenceLook> looks;
  looks.reserve(values.size());
  for (double v : values) looks.push_back(sequence.add(v));
  return looks;
}

namespace {
constexpr const char* kAdjustmentNames[] = {"bonferroni", "holm", "none"};  // in enum order
}  // namespace

const char* adjustment_name(Adjustment adjustment) { return enum_name(adjustment, kAdjustmentNames); }

Adjustment parse_adjustment(const std::string& text) {
  if (std::optional<Adjustment> adjustment = find_enum<Adjustment>(text, kAdjustmentNames)) return *adjustment;
  EGM_THROW(ConfigError, "unknown adjustment '{}': use bonferroni, holm or none", text);
}

double per_claim_alpha(double alpha, std::size_t claims, Adjustment adjustment) {
  EGM_REQUIRE(alpha > 0.0 && alpha < 1.0, ConfigError, "alpha must lie strictly between 0 and 1, got {}", alpha);
  // Holm computes each sequence at alpha / m too (header); its extra power comes from decide().
  if (adjustment == Adjustment::none || claims <= 1) return alpha;
  return alpha / static_cast<double>(claims);
}

const char* decision_name(Decision decision) {
  switch (decision) {
    case Decision::undecided: return "undecided";
    case Decision::positive: return "positive";
    case Decision::negative: return "negative";
    case Decision::narrow: return "narrow";
  }
  return "?";
}

bool settled(Decision decision) { return decision != Decision::undecided; }

std::vector<Decision> decide(const std::vector<SequenceLook>& looks, double alpha, Adjustment adjustment,
                             double half_width) {
  std::vector<Decision> out(looks.size(), Decision::undecided);
  std::vector<double> holm;
  // Holm ranks every claim's current p-value together, so all are adjusted before any claim is decided.
  if (adjustment == Adjustment::holm) {
    std::vector<double> p;
    for (const SequenceLook& l : looks) p.push_back(l.p_anytime);
    holm = holm_adjust(p);
  }
  for (std::size_t i = 0; i < looks.size(); ++i) {
    const SequenceLook& l = looks[i];
    if (adjustment == Adjustment::holm) {
      if (holm[i] <= alpha && l.evidence_sign != 0) {
        out[i] = l.evidence_sign > 0 ? Decision::positive : Decision::negative;
        continue;
      }
    // Bonferroni / none: the claim's own sequence, already at its per-claim alpha, decides by excluding 0.
    } else if (l.lower > 0.0) {
      out[i] = Decision::positive;
      continue;
    } else if (l.upper < 0.0) {
      out[i] = Decision::negative;
      continue;
    }
    // No sign: narrow once the interval is within half_width each side (a NaN half_width fails the > 0 test).
    if (half_width > 0.0 && l.bounded() && l.upper - l.lower <= 2.0 * half_width) out[i] = Decision::narrow;
  }
  return out;
}

}  // namespace egm::stats
