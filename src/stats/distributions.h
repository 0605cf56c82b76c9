// Student-t quantiles and tail probabilities and the normal tail, the only
// places where the library touches Boost.Math. Arguments are checked here so
// callers get egm::ConfigError instead of Boost's std::domain_error.
#pragma once

#include <cstddef>

namespace egm::stats {

// Quantile of Student's t with `df` degrees of freedom: P(T <= q) = p.
double t_quantile(double p, double df);
// Two-sided critical value for a central interval of coverage `level`
// (t_{(1+level)/2, df}); e.g. level 0.95, df 4 -> 2.776.
double t_critical(double level, double df);
// Two-sided p-value P(|T| >= |t|) for T ~ t_df. t may be +-infinity (-> 0).
double t_two_sided_p(double t, double df);

// Two-sided p-value P(|Z| >= |z|) for Z ~ N(0, 1).
double normal_two_sided_p(double z);

// The exact (Clopper-Pearson) interval of a binomial proportion, k successes
// in n > 0 trials, coverage at least `level`: the beta quantiles
// B(alpha/2; k, n-k+1) and B(1-alpha/2; k+1, n-k), 0 and 1 at the ends.
// e.g. 0 of 5 at 95%: [0, 1 - 0.025^(1/5)] = [0, 0.5218].
struct ProportionInterval {
  double low = 0.0;
  double high = 1.0;
};
ProportionInterval binomial_interval(std::size_t k, std::size_t n, double level);

// Throws ConfigError unless 0 < level < 1.
void require_level(double level);

}  // namespace egm::stats
