// Mean, SD and the Student-t interval of a few seeds (summarize), type-7
// quantiles, and the sample skewness with its standard error under normality.
#include "stats/descriptive.h"

#include <cmath>
#include <limits>

#include "stats/distributions.h"
#include "util/error.h"

namespace egm::stats {

void require_finite(const std::vector<double>& values, const char* what) {
  // A NaN or inf from a diverged run would silently poison every mean and interval downstream.
  for (std::size_t i = 0; i < values.size(); ++i) {
    EGM_REQUIRE(std::isfinite(values[i]), ConfigError,
                "{}[{}] is {}; drop diverged or missing runs before computing statistics", what, i,
                values[i]);
  }
}

Summary summarize(const std::vector<double>& values, double level) {
  require_level(level);
  EGM_REQUIRE(!values.empty(), ConfigError, "cannot summarise an empty sample (no seeds)");
  require_finite(values, "sample");
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();

  Summary s;
  s.n = values.size();
  s.level = level;
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  // One seed: a mean but no spread; NaN fills the interval fields and has_interval says so.
  if (s.n < 2) {
    s.sd = s.se = s.ci_low = s.ci_high = s.t_crit = nan;
    s.has_interval = false;
    return s;
  }
  // Two-pass variance: losses agree to ~3 digits, so sum-of-squares would cancel.
  double ss = 0.0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(s.n - 1));
  s.se = s.sd / std::sqrt(static_cast<double>(s.n));
  // Two-sided Student-t critical value with n - 1 degrees of freedom.
  s.t_crit = t_critical(level, static_cast<double>(s.n - 1));
  s.ci_low = s.mean - s.t_crit * s.se;
  s.ci_high = s.mean + s.t_crit * s.se;
  s.has_interval = true;
  return s;
}

double quantile_sorted(const std::vector<double>& sorted, double p) {
  EGM_REQUIRE(!sorted.empty(), ConfigError, "quantile of an empty sample");
  EGM_REQUIRE(p >= 0.0 && p <= 1.0, ConfigError, "quantile probability must lie in [0, 1], got {}", p);
  // Type 7: position p (n - 1) on 0-based ranks, linear between the two neighbours.
  double pos = p * static_cast<double>(sorted.size() - 1);
  std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  // p = 1 lands on the last element, which has no right neighbour to interpolate with.
  if (lo + 1 >= sorted.size()) return sorted.back();
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double sample_skewness(const std::vector<double>& values) {
  const std::size_t n = values.size();
  if (n < 3) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0.0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(n);
  // Central moments divided by n (the biased m2 and m3 of g1 = m3 / m2^1.5); G1 adjusts for n below.
  double m2 = 0.0, m3 = 0.0;
  for (double v : values) {
    const double d = v - mean;
    m2 += d * d;
    m3 += d * d * d;
  }
  m2 /= static_cast<double>(n);
  m3 /= static_cast<double>(n);
  // Every value equal: the skewness is undefined, not zero.
  if (!(m2 > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  const double nd = static_cast<double>(n);
  return std::sqrt(nd * (nd - 1.0)) / (nd - 2.0) * m3 / std::pow(m2, 1.5);
}

double skewness_standard_error(std::size_t n) {
  if (n < 3) return std::numeric_limits<double>::quiet_NaN();
  const double nd = static_cast<double>(n);
  return std::sqrt(6.0 * nd * (nd - 1.0) / ((nd - 2.0) * (nd + 1.0) * (nd + 3.0)));
}

bool strongly_skewed(const std::vector<double>& values) {
  // The README's rule: under 5 values nothing is called skewed, and beyond that |G1| must exceed 2 SE.
  if (values.size() < 5) return false;
  const double g1 = sample_skewness(values);
  return std::isfinite(g1) && std::fabs(g1) > 2.0 * skewness_standard_error(values.size());
}

}  // namespace egm::stats
