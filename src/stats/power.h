// Fixed-n planning of a paired comparison (per-seed contrasts, one-sample t
// test of mean 0 with n - 1 df): the power at n seeds, the seeds for a power,
// and the seeds for a t interval of a given half-width. egm plan uses them
// with the pilot's standard deviation (src/cli/cmd_plan.cpp).
#pragma once

#include <cstddef>

namespace egm::stats {

// Two-sided power of the one-sample (paired) t test at level alpha with n
// values (real n allowed, df = n - 1 > 0) when the true mean is `effect_sd`
// standard deviations from 0: P(T' > t_crit) + P(T' < -t_crit), T' noncentral
// t with df n - 1 and noncentrality effect_sd * sqrt(n). statsmodels'
// TTestPower().power(effect_sd, n, alpha) computes the same. Throws
// ConfigError for n <= 1, alpha outside (0, 1) or a non-finite effect.
double paired_t_power(double effect_sd, double n, double alpha);

// The real n >= 2 at which paired_t_power reaches `power` (bisection to
// 1e-10; what statsmodels' solve_power returns), and the seeds to run: its
// ceiling. Throws ConfigError for power outside (alpha, 1), effect 0, or
// more than max_n needed.
double paired_t_n_for_power(double effect_sd, double power, double alpha, double max_n = 1e7);
std::size_t seeds_for_power(double effect_sd, double power, double alpha, double max_n = 1e7);

// Smallest n >= 2 whose t interval at level 1 - alpha, t_{1-alpha/2, n-1} sd
// / sqrt(n), is at most half_width (the sd taken as known: the plug-in of a
// pilot). Throws ConfigError for sd < 0, half_width <= 0 or more than max_n.
std::size_t seeds_for_half_width(double sd, double half_width, double alpha, std::size_t max_n = 10000000);
// t_{1-alpha/2, n-1} sd / sqrt(n).
double t_half_width(double sd, std::size_t n, double alpha);

}  // namespace egm::stats
