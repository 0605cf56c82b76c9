// Paired comparison and the Wilcoxon signed-rank test.
#include <gtest/gtest.h>

#include <cmath>

#include "stats/paired.h"
#include "util/error.h"

namespace {

using namespace egm::stats;

TEST(Paired, WorkedExampleMatchesMpmath) {
  // Six seeds; differences variant - base = -0.0921, -0.1088, -0.0790,
  // -0.0905, -0.0920, -0.0965. Reference: reference_values.py ("paired").
  SeedValues base{{1, 1.4742}, {2, 1.4800}, {3, 1.4690}, {4, 1.4755}, {5, 1.4710}, {6, 1.4770}};
  SeedValues variant{{1, 1.3821}, {2, 1.3712}, {3, 1.3900}, {4, 1.3850}, {5, 1.3790}, {6, 1.3805}};
  PairedResult r = paired_compare(variant, base);
  ASSERT_EQ(r.keys.size(), 6u);
  EXPECT_TRUE(r.only_in_x.empty());
  EXPECT_NEAR(r.difference.mean, -0.09315, 1e-12);
  EXPECT_NEAR(r.difference.sd, 0.00965209821748619, 1e-12);
  EXPECT_NEAR(r.difference.ci_low, -0.103279255869207, 1e-12);
  EXPECT_NEAR(r.difference.ci_high, -0.0830207441307935, 1e-12);
  EXPECT_DOUBLE_EQ(r.df, 5.0);
  EXPECT_NEAR(r.t_stat, -23.639416466659, 1e-8);
  EXPECT_NEAR(r.p_t, 2.52248875410292e-6, 1e-14);
  // All six differences negative, no ties: V = 0, exact p = 2 * 1/64.
  EXPECT_EQ(r.wilcoxon.method, WilcoxonMethod::exact);
  EXPECT_DOUBLE_EQ(r.wilcoxon.v, 0.0);
  EXPECT_DOUBLE_EQ(r.wilcoxon.p, 2.0 / 64.0);
}

TEST(Paired, UsesOnlySharedSeedsAndReportsTheRest) {
  SeedValues x{{1, 2.0}, {2, 3.0}, {7, 9.0}};
  SeedValues y{{1, 1.0}, {2, 1.0}, {5, 0.0}};
  PairedResult r = paired_compare(x, y);
  EXPECT_EQ(r.keys, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(r.differences, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(r.only_in_x, (std::vector<std::int64_t>{7}));
  EXPECT_EQ(r.only_in_y, (std::vector<std::int64_t>{5}));
  EXPECT_THROW(paired_compare({{1, 1.0}}, {{2, 1.0}}), egm::ConfigError);
}

TEST(Paired, OneSharedSeedHasNoInterval) {
  PairedResult r = paired_compare({{3, 1.38}}, {{3, 1.47}});
  EXPECT_FALSE(r.difference.has_interval);
  EXPECT_NEAR(r.difference.mean, -0.09, 1e-12);
  EXPECT_TRUE(std::isnan(r.p_t));
}

TEST(Wilcoxon, NullCountsByHand) {
  // Subsets of {1,2,3} by sum: {} | {1} | {2} | {3},{1,2} | {1,3} | {2,3} | {1,2,3}.
  EXPECT_EQ(signed_rank_null_counts(3), (std::vector<double>{1, 1, 1, 2, 1, 1, 1}));
  double total = 0.0;
  for (double c : signed_rank_null_counts(20)) total += c;
  EXPECT_DOUBLE_EQ(total, std::ldexp(1.0, 20));
}

TEST(Wilcoxon, FiveAllPositiveExact) {
  // V = 15 is the maximum; only the all-plus sign pattern reaches it:
  // P(V >= 15) = 1/32, two-sided p = 2/32 = 0.0625.
  WilcoxonResult w = wilcoxon_signed_rank({0.3, 0.1, 0.5, 0.2, 0.4});
  EXPECT_EQ(w.method, WilcoxonMethod::exact);
  EXPECT_EQ(w.n_used, 5u);
  EXPECT_DOUBLE_EQ(w.v, 15.0);
  EXPECT_DOUBLE_EQ(w.p, 0.0625);
}

TEST(Wilcoxon, MixedSignsExactByHand) {
  // |d| ranks 1..7; negatives have ranks 1 and 5, so V = 28 - 6 = 22.
  // P(V >= 22) = P(V <= 6) by symmetry; subsets of {1..7} with sum <= 6:
  // 1+1+1+2+2+3+4 = 14 (sums 0..6). Two-sided p = 2 * 14 / 128 = 0.21875.
  WilcoxonResult w = wilcoxon_signed_rank({-0.5, 1.5, 2.5, 3.5, -4.5, 5.5, 6.5});
  EXPECT_EQ(w.method, WilcoxonMethod::exact);
  EXPECT_DOUBLE_EQ(w.v, 22.0);
  EXPECT_DOUBLE_EQ(w.p, 0.21875);
}

TEST(Wilcoxon, HollanderWolfeDepressionData) {
  // R's ?wilcox.test example (Hollander & Wolfe 1973, p. 29): one-sided
  // "greater" gives V = 40, p = 0.01953 (= 10/512), so two-sided 0.0390625.
  std::vector<double> x{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
  std::vector<double> y{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};
  std::vector<double> d;
  for (std::size_t i = 0; i < x.size(); ++i) d.push_back(x[i] - y[i]);
  WilcoxonResult w = wilcoxon_signed_rank(d);
  EXPECT_EQ(w.method, WilcoxonMethod::exact);
  EXPECT_DOUBLE_EQ(w.v, 40.0);
  EXPECT_DOUBLE_EQ(w.p, 20.0 / 512.0);
  // Forcing the normal approximation: z = (40 - 22.5 - 0.5) / sqrt(71.25)
  // (reference_values.py).
  WilcoxonResult approx = wilcoxon_signed_rank(d, /*exact_max_n=*/5);
  EXPECT_EQ(approx.method, WilcoxonMethod::normal_approx);
  EXPECT_NEAR(approx.z, 2.01398618438091, 1e-12);
  EXPECT_NEAR(approx.p, 0.0440109840129514, 1e-12);
}

TEST(Wilcoxon, TiesAndZeroUseCorrectedNormalApproximation) {
  // d = -1, 2, 2, 3, 3, 3, 0: the zero is dropped (Wilcoxon, not Pratt), n = 6.
  // Average ranks: 1 -> 1; 2,2 -> 2.5; 3,3,3 -> 5. V = 2.5+2.5+5+5+5 = 20.
  // var = 6*7*13/24 - ((8-2) + (27-3))/48 = 22.125; z = (20 - 10.5 - 0.5)/sqrt(var).
  WilcoxonResult w = wilcoxon_signed_rank({-1, 2, 2, 3, 3, 3, 0});
  EXPECT_EQ(w.method, WilcoxonMethod::normal_approx);
  EXPECT_EQ(w.n_used, 6u);
  EXPECT_EQ(w.n_zeros, 1u);
  EXPECT_TRUE(w.has_ties);
  EXPECT_DOUBLE_EQ(w.v, 20.0);
  EXPECT_NEAR(w.z, 1.91337841242984, 1e-12);
  EXPECT_NEAR(w.p, 0.0556996259666496, 1e-12);
}

TEST(Wilcoxon, LargeSampleUsesNormalApproximation) {
  // d = -1..-5, 6..30: V = 465 - 15 = 450 (reference_values.py).
  std::vector<double> d;
  for (int i = 1; i <= 30; ++i) d.push_back(i <= 5 ? -i : i);
  WilcoxonResult w = wilcoxon_signed_rank(d);
  EXPECT_EQ(w.method, WilcoxonMethod::normal_approx);
  EXPECT_DOUBLE_EQ(w.v, 450.0);
  EXPECT_NEAR(w.z, 4.46332964001202, 1e-12);
  EXPECT_NEAR(w.p, 8.06957614199733e-6, 1e-16);
}

TEST(Wilcoxon, AllZeroHasNoTest) {
  WilcoxonResult w = wilcoxon_signed_rank({0.0, 0.0});
  EXPECT_EQ(w.method, WilcoxonMethod::none);
  EXPECT_EQ(w.n_zeros, 2u);
  EXPECT_TRUE(std::isnan(w.p));
}

}  // namespace
