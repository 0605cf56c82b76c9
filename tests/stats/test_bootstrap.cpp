// Percentile bootstrap: reproducible under a seed, right on cases with a
// known bootstrap distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/bootstrap.h"
#include "util/error.h"

namespace {

using namespace egm::stats;

const std::vector<double> kLosses{1.3821, 1.3712, 1.3900, 1.3850, 1.3790, 1.3805, 1.3760};

TEST(Bootstrap, SameSeedBitwiseSameDifferentSeedDifferent) {
  BootstrapInterval a = bootstrap_mean(kLosses, 42, 5000);
  BootstrapInterval b = bootstrap_mean(kLosses, 42, 5000);
  BootstrapInterval c = bootstrap_mean(kLosses, 43, 5000);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_TRUE(a.low != c.low || a.high != c.high);
  EXPECT_EQ(a.seed, 42u);
  EXPECT_LT(a.low, a.estimate);
  EXPECT_GT(a.high, a.estimate);
}

TEST(Bootstrap, TwoPointsHaveKnownDistribution) {
  // Resample means of {0, 1}: 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4, so
  // the 2.5% and 97.5% percentiles are 0 and 1 (with 10000 resamples the
  // count of zeros, ~2500, is far above the 250 that the lower quantile needs).
  BootstrapInterval r = bootstrap_mean({0.0, 1.0}, 5);
  EXPECT_DOUBLE_EQ(r.estimate, 0.5);
  EXPECT_DOUBLE_EQ(r.low, 0.0);
  EXPECT_DOUBLE_EQ(r.high, 1.0);
  // Half of the resample means are 0.5, so a 40% interval (30%..70%) is {0.5}.
  BootstrapInterval narrow = bootstrap_mean({0.0, 1.0}, 5, 10000, 0.40);
  EXPECT_DOUBLE_EQ(narrow.low, 0.5);
  EXPECT_DOUBLE_EQ(narrow.high, 0.5);
}

TEST(Bootstrap, WidthMatchesPlugInStandardError) {
  // 0..39: mean 19.5, plug-in sd sqrt((n^2 - 1)/12) = 11.54; bootstrap SE of
  // the mean = 11.54 / sqrt(40) = 1.825; normal-theory 95% width 2 * 1.96 *
  // 1.825 = 7.15. Percentile width should agree within ~5%.
  std::vector<double> v;
  for (int i = 0; i < 40; ++i) v.push_back(i);
  BootstrapInterval r = bootstrap_mean(v, 2024, 20000);
  double expected = 2 * 1.959964 * std::sqrt((40.0 * 40.0 - 1) / 12.0) / std::sqrt(40.0);
  EXPECT_NEAR(r.high - r.low, expected, 0.05 * expected);
  EXPECT_NEAR((r.high + r.low) / 2, 19.5, 0.3);
}

TEST(Bootstrap, UserStatistic) {
  auto max_of = [](const std::vector<double>& x) { return *std::max_element(x.begin(), x.end()); };
  BootstrapInterval r = bootstrap_statistic({1.0, 2.0, 3.0}, max_of, 9, 1000);
  EXPECT_DOUBLE_EQ(r.estimate, 3.0);
  EXPECT_GE(r.low, 1.0);
  EXPECT_DOUBLE_EQ(r.high, 3.0);  // P(max = 3) = 1 - (2/3)^3 = 0.70
  EXPECT_THROW(bootstrap_mean({}, 1), egm::ConfigError);
  EXPECT_THROW(bootstrap_mean({1.0}, 1, 1), egm::ConfigError);
}

}  // namespace

namespace {

// bootstrap_mean's own loop (no per-resample copy) against the generic path
// with the mean as its statistic: the same draws and sums, so every interval
// is the same to the bit, for small and large samples (25,000: a 100,000-cell
// 2x2 sweep's seeds per variant) and several seeds and levels.
TEST(Bootstrap, MeanIsTheGenericPathToTheBit) {
  auto mean = [](const std::vector<double>& v) {
    double sum = 0.0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  std::mt19937_64 gen(7);
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1000}, std::size_t{25000}}) {
    std::vector<double> values(n);
    for (double& v : values) v = 1.3 + static_cast<double>(gen() % 100000) * 1e-6;
    for (std::uint64_t seed : {0ull, 42ull, 0x9e3779b97f4a7c15ull}) {
      const std::size_t resamples = n >= 25000 ? 200 : 2000;
      for (double level : {0.95, 0.99}) {
        const BootstrapInterval fast = bootstrap_mean(values, seed, resamples, level);
        const BootstrapInterval generic = bootstrap_statistic(values, mean, seed, resamples, level);
        EXPECT_EQ(fast.estimate, generic.estimate) << n << " " << seed;
        EXPECT_EQ(fast.low, generic.low) << n << " " << seed;
        EXPECT_EQ(fast.high, generic.high) << n << " " << seed;
        EXPECT_EQ(fast.resamples, generic.resamples);
        EXPECT_EQ(fast.seed, generic.seed);
      }
    }
  }
  EXPECT_THROW(bootstrap_mean({}, 1, 100), egm::ConfigError);
  EXPECT_THROW(bootstrap_mean({1.0, NAN}, 1, 100), egm::ConfigError);
  EXPECT_THROW(bootstrap_mean({1.0, 2.0}, 1, 1), egm::ConfigError);
}

}  // namespace
