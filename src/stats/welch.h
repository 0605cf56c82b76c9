// Two-sample comparison without assuming equal variances (Welch), and its
// generalisation to any linear contrast of group means with the
// Welch-Satterthwaite degrees of freedom. Used when the groups were not run
// on the same seeds, so no pairing is possible.
#pragma once

#include <cstddef>
#include <vector>

#include "stats/descriptive.h"

namespace egm::stats {

// A linear contrast sum_g c_g * mean_g with its t interval.
struct ContrastResult {
  double estimate = 0.0;
  double se = 0.0;       // sqrt(sum_g c_g^2 s_g^2 / n_g)
  double df = 0.0;       // Welch-Satterthwaite
  double t_stat = 0.0;   // estimate / se
  double p = 0.0;        // two-sided, H0: contrast = 0
  double t_crit = 0.0;
  double ci_low = 0.0;
  double ci_high = 0.0;
  double level = 0.95;
  // False when a group with c_g != 0 has a single value (its variance is
  // unknown); then se, df, t_stat, p, t_crit and the interval are NaN. When
  // every such group has zero variance the interval collapses to the point
  // estimate, df and t_crit are NaN, and p is 1 (estimate 0) or 0.
  bool has_interval = false;
};

// sum_g c_g * mean(groups[g]) with
//   df = (sum_g v_g)^2 / sum_g (v_g^2 / (n_g - 1)),  v_g = c_g^2 s_g^2 / n_g.
// Groups whose coefficient is 0 are ignored (may be empty). Throws
// ConfigError on size mismatch, an empty group with c_g != 0, or non-finite
// values.
ContrastResult satterthwaite_interval(const std::vector<double>& coefficients,
                                      const std::vector<std::vector<double>>& groups,
                                      double level = 0.95);

struct WelchResult {
  Summary x;
  Summary y;
  ContrastResult difference;  // mean(x) - mean(y)
};

// Welch's two-sample t: the contrast (+1, -1) over (x, y).
WelchResult welch_test(const std::vector<double>& x, const std::vector<double>& y, double level = 0.95);

}  // namespace egm::stats
