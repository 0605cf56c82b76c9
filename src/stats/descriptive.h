// Mean, sample standard deviation and a Student-t confidence interval for the
// mean of a handful of seeds. With few seeds the normal 1.96 is badly too
// narrow (df = 4 needs 2.776), so the critical value always comes from t.
#pragma once

#include <cstddef>
#include <vector>

namespace egm::stats {

struct Summary {
  std::size_t n = 0;
  double mean = 0.0;
  double sd = 0.0;       // sample standard deviation (divisor n - 1); NaN when n = 1
  double se = 0.0;       // sd / sqrt(n); NaN when n = 1
  double ci_low = 0.0;   // mean -+ t_crit * se; NaN when n = 1
  double ci_high = 0.0;
  double t_crit = 0.0;   // t_{(1+level)/2, n-1}; NaN when n = 1
  double level = 0.95;
  // False with one value: callers print "no interval with one seed".
  bool has_interval = false;
};

// Throws ConfigError for an empty vector, a non-finite value or a level
// outside (0, 1).
Summary summarize(const std::vector<double>& values, double level = 0.95);

// Quantile of already sorted values by linear interpolation between order
// statistics (Hyndman & Fan type 7, R's default): position p * (n - 1).
double quantile_sorted(const std::vector<double>& sorted, double p);

// Throws ConfigError naming `what` if any value is NaN or infinite.
void require_finite(const std::vector<double>& values, const char* what);

}  // namespace egm::stats
