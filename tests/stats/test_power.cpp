// Fixed-n planning of a paired comparison. Reference values: statsmodels
// 0.15.0 (scipy 1.17.1), TTestPower().power / solve_power with
// alternative='two-sided'; half-widths by hand from scipy's t quantiles.
// tests/stats/check_power_statsmodels.py compares many more points live.
#include <gtest/gtest.h>

#include "stats/power.h"
#include "util/error.h"

namespace egm::stats {
namespace {

TEST(PairedPower, MatchesStatsmodels) {
  EXPECT_NEAR(paired_t_power(0.5, 20, 0.05), 0.5645044184390203, 1e-9);
  EXPECT_NEAR(paired_t_power(1.0, 10, 0.05), 0.8030968566327218, 1e-9);
  EXPECT_NEAR(paired_t_power(0.8, 7.5, 0.01), 0.1831835720737787, 1e-9);
  EXPECT_NEAR(paired_t_power(2.0, 3, 0.05), 0.4707494312784346, 1e-9);
  EXPECT_NEAR(paired_t_power(0.3, 100, 0.025), 0.7643670732860837, 1e-9);
  // Symmetric in the sign of the effect; alpha at effect 0.
  EXPECT_NEAR(paired_t_power(-0.5, 20, 0.05), 0.5645044184390203, 1e-9);
  EXPECT_DOUBLE_EQ(paired_t_power(0.0, 20, 0.05), 0.05);
}

TEST(PairedPower, SeedsForPowerMatchStatsmodelsSolvePower) {
  // statsmodels' root finder stops about 1e-6 short: at its 33.3671312 its own
  // power is 0.8 + 2.8e-8, at ours 0.8 + 1e-13. Hence 1e-5.
  EXPECT_NEAR(paired_t_n_for_power(0.5, 0.8, 0.05), 33.36713118431779, 1e-5);
  EXPECT_NEAR(paired_t_n_for_power(1.0, 0.8, 0.05), 9.93785094105438, 1e-5);
  EXPECT_NEAR(paired_t_n_for_power(2.0, 0.8, 0.05), 4.22071858501904, 1e-5);
  EXPECT_NEAR(paired_t_n_for_power(1.0, 0.9, 0.025), 15.063227198290893, 1e-5);
  EXPECT_NEAR(paired_t_n_for_power(0.25, 0.8, 0.05), 127.51583051555221, 1e-5);
  EXPECT_EQ(seeds_for_power(0.5, 0.8, 0.05), 34u);
  EXPECT_EQ(seeds_for_power(1.0, 0.8, 0.05), 10u);
  EXPECT_EQ(seeds_for_power(2.0, 0.8, 0.05), 5u);
  // Bonferroni over two claims: each at 0.025.
  EXPECT_EQ(seeds_for_power(1.0, 0.9, 0.025), 16u);
}

TEST(HalfWidth, HandWorked) {
  // sd 1, H 0.5, alpha 0.05: t_{.975,16} / sqrt(17) = 0.5142 > 0.5, t_{.975,17} / sqrt(18) = 0.4973.
  EXPECT_EQ(seeds_for_half_width(1.0, 0.5, 0.05), 18u);
  EXPECT_NEAR(t_half_width(1.0, 18, 0.05), 0.49728830071298424, 1e-12);
  // The quick sweep's interaction (sd 0.0186 over 3 seeds) to +-0.01: 16 seeds.
  EXPECT_EQ(seeds_for_half_width(0.0186, 0.01, 0.05), 16u);
  EXPECT_EQ(seeds_for_half_width(2.0, 0.25, 0.025), 325u);
  EXPECT_EQ(seeds_for_half_width(0.0, 0.25, 0.05), 2u);
}

TEST(PairedPower, RefusesBadInput) {
  EXPECT_THROW(paired_t_power(0.5, 1.0, 0.05), ConfigError);
  EXPECT_THROW(paired_t_power(0.5, 10, 0.0), ConfigError);
  EXPECT_THROW(seeds_for_power(0.0, 0.8, 0.05), ConfigError);
  EXPECT_THROW(seeds_for_power(0.5, 1.0, 0.05), ConfigError);
  EXPECT_THROW(seeds_for_half_width(1.0, 0.0, 0.05), ConfigError);
  EXPECT_THROW(seeds_for_half_width(1.0, 1e-9, 0.05, 1000), ConfigError);
}

}  // namespace
}  // namespace egm::stats
