// Student-t quantiles and the one-sample summary.
#include <gtest/gtest.h>

#include <cmath>

#include "stats/descriptive.h"
#include "stats/distributions.h"
#include "util/error.h"

namespace {

using namespace egm::stats;

TEST(Distributions, TQuantilesMatchPrintedTables) {
  // Two-sided 95% critical values, t_{0.975, df}, from any printed t table
  // (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), three decimals.
  EXPECT_NEAR(t_quantile(0.975, 1), 12.706, 5e-4);
  EXPECT_NEAR(t_quantile(0.975, 2), 4.303, 5e-4);
  EXPECT_NEAR(t_quantile(0.975, 4), 2.776, 5e-4);
  EXPECT_NEAR(t_quantile(0.975, 9), 2.262, 5e-4);
  EXPECT_NEAR(t_quantile(0.975, 29), 2.045, 5e-4);
  // Same table, other columns: t_{0.95,10} = 1.812, t_{0.995,5} = 4.032.
  EXPECT_NEAR(t_quantile(0.95, 10), 1.812, 5e-4);
  EXPECT_NEAR(t_quantile(0.995, 5), 4.032, 5e-4);
  // More digits from reference_values.py (mpmath, incomplete beta + root find).
  EXPECT_NEAR(t_critical(0.95, 4), 2.77644510519779, 1e-12);
  EXPECT_NEAR(t_critical(0.95, 29), 2.0452296421327, 1e-12);
}

TEST(Distributions, TwoSidedPValues) {
  // Inverse of the quantile: P(|T_4| >= 2.776445...) = 0.05.
  EXPECT_NEAR(t_two_sided_p(2.77644510519779, 4), 0.05, 1e-12);
  EXPECT_NEAR(t_two_sided_p(-2.77644510519779, 4), 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(t_two_sided_p(0.0, 7), 1.0);
  // Normal table: P(|Z| >= 1.959964) = 0.05.
  EXPECT_NEAR(normal_two_sided_p(1.959963984540054), 0.05, 1e-12);
  EXPECT_THROW(t_quantile(0.975, 0.0), egm::ConfigError);
  EXPECT_THROW(t_quantile(1.0, 3.0), egm::ConfigError);
}

// Clopper-Pearson at the ends in closed form: 0 of n has upper 1 - (alpha/2)^(1/n),
// n of n lower (alpha/2)^(1/n); 3 of 10 at 95% is [0.066739, 0.652453] (the textbook value).
TEST(Distributions, BinomialIntervalExact) {
  const ProportionInterval none = binomial_interval(0, 5, 0.95);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_NEAR(none.high, 1.0 - std::pow(0.025, 1.0 / 5.0), 1e-12);
  const ProportionInterval all = binomial_interval(5, 5, 0.95);
  EXPECT_NEAR(all.low, std::pow(0.025, 1.0 / 5.0), 1e-12);
  EXPECT_EQ(all.high, 1.0);
  const ProportionInterval three = binomial_interval(3, 10, 0.95);
  EXPECT_NEAR(three.low, 0.066739, 1e-6);
  EXPECT_NEAR(three.high, 0.652453, 1e-6);
  EXPECT_THROW(binomial_interval(1, 0, 0.95), egm::ConfigError);
  EXPECT_THROW(binomial_interval(6, 5, 0.95), egm::ConfigError);
}

TEST(Summary, HandComputedFiveSeeds) {
  // By hand: mean 1.40; deviations 0, .02, -.02, .01, -.01 -> SS = 0.001,
  // var = 0.00025, sd = 0.0158113883, se = sd / sqrt(5) = 0.0070710678;
  // half-width = 2.776445105 * se = 0.0196322.
  Summary s = summarize({1.40, 1.42, 1.38, 1.41, 1.39});
  EXPECT_EQ(s.n, 5u);
  EXPECT_TRUE(s.has_interval);
  EXPECT_NEAR(s.mean, 1.40, 1e-14);
  EXPECT_NEAR(s.sd, 0.015811388300841896, 1e-14);
  EXPECT_NEAR(s.se, 0.0070710678118654755, 1e-14);
  EXPECT_NEAR(s.t_crit, 2.77644510519779, 1e-12);
  EXPECT_NEAR(s.ci_low, 1.40 - 2.77644510519779 * 0.0070710678118654755, 1e-12);
  EXPECT_NEAR(s.ci_high, 1.40 + 2.77644510519779 * 0.0070710678118654755, 1e-12);
  // Not the normal 1.96: the t interval is about 42% wider at df = 4.
  EXPECT_GT(s.ci_high - s.mean, 1.96 * s.se * 1.4);
}

TEST(Summary, LevelIsConfigurable) {
  // 90%: t_{0.95, 4} = 2.132 (table).
  Summary s = summarize({1.40, 1.42, 1.38, 1.41, 1.39}, 0.90);
  EXPECT_NEAR(s.t_crit, 2.132, 5e-4);
  EXPECT_DOUBLE_EQ(s.level, 0.90);
  EXPECT_THROW(summarize({1.0, 2.0}, 1.0), egm::ConfigError);
  EXPECT_THROW(summarize({1.0, 2.0}, 0.0), egm::ConfigError);
}

TEST(Summary, OneSeedHasMeanButNoInterval) {
  Summary s = summarize({1.4742});
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.mean, 1.4742);
  EXPECT_FALSE(s.has_interval);
  EXPECT_TRUE(std::isnan(s.sd));
  EXPECT_TRUE(std::isnan(s.se));
  EXPECT_TRUE(std::isnan(s.ci_low));
  EXPECT_TRUE(std::isnan(s.ci_high));
}

TEST(Summary, RejectsEmptyAndNonFinite) {
  EXPECT_THROW(summarize({}), egm::ConfigError);
  EXPECT_THROW(summarize({1.0, NAN}), egm::ConfigError);
  EXPECT_THROW(summarize({1.0, INFINITY}), egm::ConfigError);
}

TEST(Quantile, Type7Interpolation) {
  // R: quantile(c(1, 2, 4, 8), c(0, .25, .5, 1)) = 1, 1.75, 3, 8 (type 7:
  // position p (n - 1) = 0.75 -> 1 + 0.75 * (2 - 1)).
  std::vector<double> v{1, 2, 4, 8};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 8.0);
}

}  // namespace
