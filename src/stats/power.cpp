// Planning a paired t comparison: the power at n seeds through the noncentral t,
// and the seeds a power or an interval half-width needs (doubling n, then bisection).
#include "stats/power.h"

#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <cmath>

#include "util/error.h"

namespace egm::stats {

namespace bm = boost::math;

namespace {
void require_alpha(double alpha) {
  EGM_REQUIRE(alpha > 0.0 && alpha < 1.0, ConfigError, "alpha must lie strictly between 0 and 1, got {}", alpha);
}
}  // namespace

double paired_t_power(double effect_sd, double n, double alpha) {
  require_alpha(alpha);
  EGM_REQUIRE(std::isfinite(effect_sd), ConfigError, "the effect must be finite, got {}", effect_sd);
  EGM_REQUIRE(n > 1.0 && std::isfinite(n), ConfigError, "power needs more than one seed, got {}", n);
  const double df = n - 1.0;
  // Two-sided test at alpha: reject when |t| exceeds the upper alpha / 2 point of t(n - 1).
  const double crit = bm::quantile(bm::complement(bm::students_t(df), alpha / 2.0));
  // Noncentrality of the paired t: the effect in sd units times sqrt(n).
  const double nc = effect_sd * std::sqrt(n);
  // No effect: every rejection is a type-I error, which has probability alpha exactly.
  if (nc == 0.0) return alpha;
  const bm::non_central_t nct(df, nc);
  // Either tail rejects: P(T > crit) + P(T < -crit) under the noncentral t.
  return bm::cdf(bm::complement(nct, crit)) + bm::cdf(nct, -crit);
}

double paired_t_n_for_power(double effect_sd, double power, double alpha, double max_n) {
  require_alpha(alpha);
  EGM_REQUIRE(power > alpha && power < 1.0, ConfigError, "power must lie strictly between alpha ({}) and 1, got {}",
              alpha, power);
  EGM_REQUIRE(std::isfinite(effect_sd) && effect_sd != 0.0, ConfigError,
              "the effect must be finite and nonzero, got {}", effect_sd);
  // n is real here (the noncentral t takes a real df); 2 is the fewest seeds with a variance.
  double lo = 2.0;
  if (paired_t_power(effect_sd, lo, alpha) >= power) return lo;
  double hi = 4.0;
  while (paired_t_power(effect_sd, hi, alpha) < power) {
    lo = hi;
    hi *= 2.0;
    // The cap ends the doubling: an effect near 0 would otherwise need ever more seeds.
    EGM_REQUIRE(hi <= 2.0 * max_n, ConfigError, "more than {:g} seeds would be needed for power {} at an effect of {} sd",
                max_n, power, effect_sd);
  }
  // Power rises with n: bisection.
  while (hi - lo > 1e-10 * hi) {
    const double mid = 0.5 * (lo + hi);
    (paired_t_power(effect_sd, mid, alpha) < power ? lo : hi) = mid;
  }
  return hi;
}

std::size_t seeds_for_power(double effect_sd, double power, double alpha, double max_n) {
  const double n = paired_t_n_for_power(effect_sd, power, alpha, max_n);
  // A root a hair above an integer (bisection tolerance) is that integer.
  const double rounded = std::round(n);
  if (std::fabs(n - rounded) < 1e-7 && paired_t_power(effect_sd, rounded, alpha) >= power - 1e-9)
    return static_cast<std::size_t>(rounded);
  return static_cast<std::size_t>(std::ceil(n));
}

double t_half_width(double sd, std::size_t n, double alpha) {
  require_alpha(alpha);
  EGM_REQUIRE(n >= 2, ConfigError, "a t interval needs at least two seeds, got {}", n);
  const double crit = bm::quantile(bm::complement(bm::students_t(static_cast<double>(n - 1)), alpha / 2.0));
  return crit * sd / std::sqrt(static_cast<double>(n));
}

std::size_t seeds_for_half_width(double sd, double half_width, double alpha, std::size_t max_n) {
  require_alpha(alpha);
  EGM_REQUIRE(std::isfinite(sd) && sd >= 0.0, ConfigError, "the sd must be finite and >= 0, got {}", sd);
  EGM_REQUIRE(std::isfinite(half_width) && half_width > 0.0, ConfigError, "the half-width must be > 0, got {}",
              half_width);
  // The half-width falls with n: double, then bisect on integers.
  // lo = 1 is only a bound: it is never evaluated (t_half_width needs 2), and every mid lies above it.
  std::size_t lo = 1, hi = 2;
  while (t_half_width(sd, hi, alpha) > half_width) {
    lo = hi;
    hi *= 2;
    EGM_REQUIRE(hi <= 2 * max_n, ConfigError, "more than {} seeds would be needed for a half-width of {} (sd {})",
                max_n, half_width, sd);
  }
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (t_half_width(sd, mid, alpha) > half_width ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace egm::stats
