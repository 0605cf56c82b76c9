// Student-t quantiles and tail probabilities and the normal tail, the only
// places where the library touches Boost.Math. Arguments are checked here so
// callers get egm::ConfigError instead of Boost's std::domain_error.
#pragma once

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

// Throws ConfigError unless 0 < level < 1.
void require_level(double level);

}  // namespace egm::stats
