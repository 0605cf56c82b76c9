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

// Sample skewness G1, the adjusted Fisher-Pearson coefficient
// sqrt(n (n - 1)) / (n - 2) * m3 / m2^(3/2) (scipy.stats.skew with
// bias=False); NaN for fewer than 3 values or no spread.
double sample_skewness(const std::vector<double>& values);
// Its standard error for n Gaussian values:
// sqrt(6 n (n - 1) / ((n - 2) (n + 1) (n + 3))).
double skewness_standard_error(std::size_t n);
// The rule the analysis warns by (src/stats/README.md, "Assumptions"): at
// least 5 values whose |G1| exceeds twice its standard error under normality
// (about a 5% false alarm rate for Gaussian values).
bool strongly_skewed(const std::vector<double>& values);

// Throws ConfigError naming `what` if any value is NaN or infinite.
void require_finite(const std::vector<double>& values, const char* what);

}  // namespace egm::stats
