// Boost.Math behind egm's checks: t quantiles and two-sided p-values, the normal
// tail, and the Clopper-Pearson interval of a proportion (through the beta).
#include "stats/distributions.h"

#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <cmath>

#include "util/error.h"

namespace egm::stats {

namespace bm = boost::math;

namespace {
// Boost throws a domain error at p = 0 or 1; a ConfigError that names the value is raised first.
void require_probability(double p, const char* what) {
  EGM_REQUIRE(p > 0.0 && p < 1.0, ConfigError, "{} must lie strictly between 0 and 1, got {}", what, p);
}
void require_df(double df) {
  EGM_REQUIRE(std::isfinite(df) && df > 0.0, ConfigError,
              "degrees of freedom must be finite and positive, got {}", df);
}
}  // namespace

void require_level(double level) {
  EGM_REQUIRE(level > 0.0 && level < 1.0, ConfigError,
              "confidence level must lie strictly between 0 and 1 (e.g. 0.95), got {}", level);
}

double t_quantile(double p, double df) {
  require_probability(p, "t quantile probability");
  require_df(df);
  return bm::quantile(bm::students_t(df), p);
}

double t_critical(double level, double df) {
  require_level(level);
  // A two-sided interval puts (1 - level) / 2 in each tail, so the upper bound is the (1 + level) / 2 quantile.
  return t_quantile(0.5 + level / 2.0, df);
}

ProportionInterval binomial_interval(std::size_t k, std::size_t n, double level) {
  require_level(level);
  EGM_REQUIRE(n > 0 && k <= n, ConfigError, "a proportion needs 0 <= k <= n and n > 0, got {} of {}", k, n);
  // Clopper-Pearson: each bound is a beta quantile. At k = 0 (or k = n) that
  // beta is degenerate and the bound is exactly 0 (or 1).
  const double tail = (1.0 - level) / 2.0;
  const double kk = static_cast<double>(k), nn = static_cast<double>(n);
  ProportionInterval out;
  out.low = k == 0 ? 0.0 : bm::quantile(bm::beta_distribution<double>(kk, nn - kk + 1.0), tail);
  out.high = k == n ? 1.0 : bm::quantile(bm::beta_distribution<double>(kk + 1.0, nn - kk), 1.0 - tail);
  return out;
}

double t_two_sided_p(double t, double df) {
  require_df(df);
  EGM_REQUIRE(!std::isnan(t), ConfigError, "t statistic is NaN");
  // An infinite t (zero spread, nonzero mean) has no tail at all.
  if (std::isinf(t)) return 0.0;
  // The upper tail via the complement keeps precision for large |t|.
  double p = 2.0 * bm::cdf(bm::complement(bm::students_t(df), std::fabs(t)));
  // 2 x the tail is 1 at t = 0; the clamp keeps rounding from going past it.
  return p > 1.0 ? 1.0 : p;
}

double normal_two_sided_p(double z) {
  EGM_REQUIRE(!std::isnan(z), ConfigError, "z is NaN");
  if (std::isinf(z)) return 0.0;
  // The same two-sided tail for a z score (wilcoxon's normal approximation uses it).
  double p = 2.0 * bm::cdf(bm::complement(bm::normal(), std::fabs(z)));
  return p > 1.0 ? 1.0 : p;
}

}  // namespace egm::stats
