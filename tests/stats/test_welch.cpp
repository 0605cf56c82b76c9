// Welch two-sample test and Satterthwaite contrasts.
#include <gtest/gtest.h>

#include <cmath>

#include "stats/welch.h"
#include "util/error.h"

namespace {

using namespace egm::stats;

TEST(Welch, WorkedExampleMatchesMpmath) {
  // x: 4 variant seeds, y: 6 base seeds; reference_values.py ("welch").
  std::vector<double> x{1.3821, 1.3712, 1.3900, 1.3850};
  std::vector<double> y{1.4742, 1.4800, 1.4690, 1.4755, 1.4710, 1.4770};
  WelchResult r = welch_test(x, y);
  EXPECT_NEAR(r.difference.estimate, -0.092375, 1e-12);
  EXPECT_NEAR(r.difference.se, 0.00429784345146881, 1e-12);
  EXPECT_NEAR(r.difference.df, 4.0300643212603, 1e-9);
  EXPECT_NEAR(r.difference.ci_low, -0.104272701236566, 1e-10);
  EXPECT_NEAR(r.difference.ci_high, -0.0804772987634345, 1e-10);
  EXPECT_NEAR(r.difference.t_stat, -21.4933375408149, 1e-8);
  EXPECT_NEAR(r.difference.p, 2.6104367203404e-5, 1e-12);
  EXPECT_TRUE(r.difference.has_interval);
  EXPECT_EQ(r.x.n, 4u);
  EXPECT_EQ(r.y.n, 6u);
}

TEST(Welch, EqualSizesAndVariancesGivePooledDf) {
  // With n_x = n_y and s_x = s_y, Satterthwaite's df is exactly 2n - 2:
  // (2v)^2 / (2 v^2 / (n - 1)) = 2 (n - 1). Both samples: sd 1 around 0 / 5.
  WelchResult r = welch_test({-1, 0, 1}, {4, 5, 6});
  EXPECT_NEAR(r.difference.df, 4.0, 1e-12);
  EXPECT_NEAR(r.difference.estimate, -5.0, 1e-12);
  EXPECT_NEAR(r.difference.se, std::sqrt(2.0 / 3.0), 1e-12);
}

TEST(Satterthwaite, ZeroCoefficientGroupsAreIgnoredAndOneValueGivesNoInterval) {
  ContrastResult r = satterthwaite_interval({1.0, 0.0, -1.0}, {{-1, 0, 1}, {}, {4, 5, 6}});
  EXPECT_NEAR(r.df, 4.0, 1e-12);
  ContrastResult single = satterthwaite_interval({1.0, -1.0}, {{2.0}, {1.0, 3.0}});
  EXPECT_FALSE(single.has_interval);
  EXPECT_DOUBLE_EQ(single.estimate, 0.0);
  EXPECT_TRUE(std::isnan(single.ci_low));
  EXPECT_THROW(satterthwaite_interval({1.0}, {{1.0}, {2.0}}), egm::ConfigError);
  EXPECT_THROW(satterthwaite_interval({1.0, 1.0}, {{1.0}, {}}), egm::ConfigError);
}

TEST(Satterthwaite, ConstantGroupsCollapseToThePoint) {
  ContrastResult r = satterthwaite_interval({1.0, -1.0}, {{2.0, 2.0}, {1.0, 1.0}});
  EXPECT_TRUE(r.has_interval);
  EXPECT_DOUBLE_EQ(r.ci_low, 1.0);
  EXPECT_DOUBLE_EQ(r.ci_high, 1.0);
  EXPECT_DOUBLE_EQ(r.p, 0.0);
}

}  // namespace
