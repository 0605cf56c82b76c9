// Welch's two-sample t test and any linear contrast of group means with
// Welch-Satterthwaite degrees of freedom (groups not run on the same seeds).
#include "stats/welch.h"

#include <cmath>
#include <limits>

#include "stats/distributions.h"
#include "util/error.h"

namespace egm::stats {

ContrastResult satterthwaite_interval(const std::vector<double>& coefficients,
                                      const std::vector<std::vector<double>>& groups, double level) {
  require_level(level);
  EGM_REQUIRE(!coefficients.empty(), ConfigError, "a contrast needs at least one group");
  EGM_REQUIRE(coefficients.size() == groups.size(), ConfigError,
              "contrast has {} coefficients but {} groups", coefficients.size(), groups.size());
  require_finite(coefficients, "contrast coefficients");
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();

  ContrastResult r;
  r.level = level;
  double var_sum = 0.0;   // sum_g v_g
  double df_denom = 0.0;  // sum_g v_g^2 / (n_g - 1)
  bool variance_known = true;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    double c = coefficients[g];
    // A zero coefficient leaves its group out of the contrast: it may even be empty.
    if (c == 0.0) continue;
    EGM_REQUIRE(!groups[g].empty(), ConfigError, "group {} of the contrast (coefficient {}) has no values", g, c);
    Summary s = summarize(groups[g], level);
    r.estimate += c * s.mean;
    // A group with one value has no variance: the estimate stands but the contrast has no interval.
    if (!s.has_interval) {
      variance_known = false;
      continue;
    }
    // v_g = c_g^2 s_g^2 / n_g, the variance of c_g times group g's mean.
    double v = c * c * s.sd * s.sd / static_cast<double>(s.n);
    var_sum += v;
    df_denom += v * v / static_cast<double>(s.n - 1);
  }
  if (!variance_known) {
    r.se = r.df = r.t_stat = r.p = r.t_crit = r.ci_low = r.ci_high = nan;
    r.has_interval = false;
    return r;
  }
  r.has_interval = true;
  r.se = std::sqrt(var_sum);
  if (var_sum == 0.0) {
    // Every group is constant: nothing to be uncertain about.
    r.df = r.t_crit = nan;
    r.ci_low = r.ci_high = r.estimate;
    r.t_stat = r.estimate == 0.0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), r.estimate);
    r.p = r.estimate == 0.0 ? 1.0 : 0.0;
    return r;
  }
  // Welch-Satterthwaite: df = (sum v_g)^2 / sum (v_g^2 / (n_g - 1)).
  r.df = var_sum * var_sum / df_denom;
  r.t_crit = t_critical(level, r.df);
  r.ci_low = r.estimate - r.t_crit * r.se;
  r.ci_high = r.estimate + r.t_crit * r.se;
  r.t_stat = r.estimate / r.se;
  r.p = t_two_sided_p(r.t_stat, r.df);
  return r;
}

WelchResult welch_test(const std::vector<double>& x, const std::vector<double>& y, double level) {
  WelchResult r;
  r.x = summarize(x, level);
  r.y = summarize(y, level);
  r.difference = satterthwaite_interval({1.0, -1.0}, {x, y}, level);
  return r;
}

}  // namespace egm::stats
