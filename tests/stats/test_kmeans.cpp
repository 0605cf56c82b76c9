// k-means, choice of k, and the paper's sigma regions.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "stats/kmeans.h"
#include "stats/kmeans_select.h"
#include "stats/sigma_region.h"
#include "util/error.h"

namespace {

using namespace egm::stats;

// Portable standard normal draws for test data (Box-Muller on raw 64-bit
// draws; std::normal_distribution differs between standard libraries).
class Gaussian {
 public:
  explicit Gaussian(std::uint64_t seed) : rng_(seed) {}
  double operator()() {
    double u1 = (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53;
    double u2 = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::mt19937_64 rng_;
};

Points blobs(const std::vector<std::array<double, 2>>& centres, std::size_t per_blob, double spread,
             std::uint64_t seed) {
  Gaussian g(seed);
  Points p;
  for (const auto& c : centres) {
    for (std::size_t i = 0; i < per_blob; ++i) p.push_back({c[0] + spread * g(), c[1] + spread * g()});
  }
  return p;
}

TEST(KMeans, OneDimensionalHandExample) {
  // {0,1,2} and {10,11,12}: centres 1 and 11, within-SS = (1 + 0 + 1) + (1 + 0 + 1) = 4.
  KMeansFit fit = kmeans(points_1d({10, 0, 11, 2, 12, 1}), 2);
  ASSERT_EQ(fit.centres.size(), 2u);
  EXPECT_DOUBLE_EQ(fit.centres[0][0], 1.0);  // ascending order
  EXPECT_DOUBLE_EQ(fit.centres[1][0], 11.0);
  EXPECT_DOUBLE_EQ(fit.within_ss, 4.0);
  EXPECT_EQ(fit.assignments, (std::vector<std::size_t>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(fit.sizes, (std::vector<std::size_t>{3, 3}));
  EXPECT_TRUE(fit.converged);
}

TEST(KMeans, RecoversWellSeparatedClusters) {
  std::vector<std::array<double, 2>> truth{{0, 0}, {0, 10}, {10, 0}, {10, 10}};
  Points p = blobs(truth, 25, 0.5, 11);
  KMeansFit fit = kmeans(p, 4, {});
  ASSERT_EQ(fit.centres.size(), 4u);
  // Match each true centre to its nearest fitted centre; the match must be
  // one-to-one, close, and hold exactly that blob's 25 points.
  std::vector<bool> used(4, false);
  for (std::size_t b = 0; b < 4; ++b) {
    std::size_t best = 0;
    double best_d = 1e300;
    for (std::size_t c = 0; c < 4; ++c) {
      double d = std::hypot(fit.centres[c][0] - truth[b][0], fit.centres[c][1] - truth[b][1]);
      if (d < best_d) best_d = d, best = c;
    }
    EXPECT_LT(best_d, 0.3);
    EXPECT_FALSE(used[best]);
    used[best] = true;
    EXPECT_EQ(fit.sizes[best], 25u);
    for (std::size_t i = b * 25; i < (b + 1) * 25; ++i) EXPECT_EQ(fit.assignments[i], best);
  }
  // Centres come out in lexicographic order.
  for (std::size_t c = 1; c < 4; ++c) EXPECT_LT(fit.centres[c - 1], fit.centres[c]);
}

TEST(KMeans, SameSeedSameFit) {
  Points p = blobs({{0, 0}, {3, 1}, {1, 4}}, 20, 1.0, 5);
  KMeansOptions opt;
  opt.seed = 99;
  KMeansFit a = kmeans(p, 3, opt);
  KMeansFit b = kmeans(p, 3, opt);
  EXPECT_EQ(a.within_ss, b.within_ss);
  EXPECT_EQ(a.assignments, b.assignments);
}

TEST(KMeans, RejectsBadInput) {
  EXPECT_THROW(kmeans({}, 1), egm::ConfigError);
  EXPECT_THROW(kmeans(points_1d({1, 2}), 3), egm::ConfigError);
  EXPECT_THROW(kmeans(points_1d({1, 2}), 0), egm::ConfigError);
  EXPECT_THROW(kmeans({{1.0, 2.0}, {1.0}}, 1), egm::ConfigError);
  EXPECT_THROW(kmeans(points_1d({1, NAN}), 1), egm::ConfigError);
}

TEST(Silhouette, HandExample) {
  // {0, 1 | 10, 11}: point 0: a = 1, b = (10 + 11)/2 = 10.5 -> 9.5/10.5;
  // point 1: a = 1, b = (9 + 10)/2 = 9.5 -> 8.5/9.5; the other two mirror these.
  double s = silhouette(points_1d({0, 1, 10, 11}), {0, 0, 1, 1}, 2);
  EXPECT_NEAR(s, (9.5 / 10.5 + 8.5 / 9.5) / 2, 1e-15);
  EXPECT_TRUE(std::isnan(silhouette(points_1d({0, 1}), {0, 0}, 1)));
}

TEST(Bic, FormulaByHand) {
  // n = 6, d = 1, k = 2, W = 4, sizes 3/3: sigma^2 = 4/6;
  // log L = 6 ln(1/2) - 3 ln(2 pi 4/6) - 3; p = 1 + 2 + 1 = 4.
  KMeansFit fit = kmeans(points_1d({0, 1, 2, 10, 11, 12}), 2);
  double log_l = 6 * std::log(0.5) - 3 * std::log(2 * M_PI * 4.0 / 6.0) - 3;
  EXPECT_NEAR(kmeans_bic(6, 1, fit), -2 * log_l + 4 * std::log(6.0), 1e-12);
}

TEST(SelectK, FourSeparatedClustersGiveFour) {
  Points p = blobs({{0, 0}, {0, 10}, {10, 0}, {10, 10}}, 25, 0.5, 3);
  KSelectOptions opt;
  opt.kmax = 7;
  opt.kmeans.seed = 1;
  KSelection sel = select_k(p, opt);
  EXPECT_EQ(sel.gap_k, 4u);
  EXPECT_EQ(sel.silhouette_k, 4u);
  EXPECT_EQ(sel.bic_k, 4u);
  EXPECT_EQ(sel.chosen_k, 4u);
  EXPECT_EQ(sel.chosen().k, 4u);
  ASSERT_EQ(sel.scores.size(), 7u);
  EXPECT_TRUE(std::isnan(sel.scores[0].silhouette));
  EXPECT_GT(sel.scores[3].silhouette, 0.8);
}

TEST(SelectK, OneBlobPrefersOne) {
  Points p = blobs({{2, -1}}, 100, 1.0, 17);
  KSelectOptions opt;
  opt.kmax = 6;
  opt.kmeans.seed = 4;
  KSelection gap = select_k(p, opt);
  EXPECT_EQ(gap.gap_k, 1u);
  EXPECT_EQ(gap.chosen_k, 1u);
  EXPECT_EQ(gap.bic_k, 1u);
  opt.criterion = KCriterion::silhouette;
  EXPECT_EQ(select_k(p, opt).chosen_k, 1u);  // silhouette alone would say >= 2
}

TEST(SelectK, OneBlobOnALineInLogOmegaLogSigma) {
  // MoPE-like pairs on omega * sigma = 5 with log sigma ~ N(2.5, 0.4): one
  // elongated blob on a line. The principal-axis reference box keeps the gap
  // statistic from mistaking "lies on a line" for "is clustered".
  Gaussian g(23);
  Points p;
  for (int i = 0; i < 80; ++i) {
    double log_sigma = 2.5 + 0.4 * g();
    p.push_back({std::log(5.0) - log_sigma, log_sigma});
  }
  KSelectOptions opt;
  opt.kmax = 6;
  EXPECT_EQ(select_k(p, opt).gap_k, 1u);
}

TEST(SelectK, FourScalesInOneDimension) {
  // log sigma around log 3, log 12, log 35, log 90: one per paper region.
  Gaussian g(8);
  std::vector<double> log_sigma;
  for (double centre : {3.0, 12.0, 35.0, 90.0}) {
    for (int i = 0; i < 15; ++i) log_sigma.push_back(std::log(centre) + 0.08 * g());
  }
  KSelectOptions opt;
  opt.kmeans.seed = 2;
  KSelection sel = select_k(points_1d(log_sigma), opt);
  EXPECT_EQ(sel.chosen_k, 4u);
  const KMeansFit& fit = sel.chosen();
  EXPECT_EQ(sigma_region(std::exp(fit.centres[0][0])), SigmaRegion::character);
  EXPECT_EQ(sigma_region(std::exp(fit.centres[1][0])), SigmaRegion::word);
  EXPECT_EQ(sigma_region(std::exp(fit.centres[2][0])), SigmaRegion::clause);
  EXPECT_EQ(sigma_region(std::exp(fit.centres[3][0])), SigmaRegion::sentence);
  // On this data Gap(2) < Gap(1) < Gap(4): Tibshirani's original rule stops
  // at k = 1, which is why first_se_max is the default.
  opt.gap_rule = GapRule::tibshirani_2001;
  EXPECT_EQ(select_k(points_1d(log_sigma), opt).gap_k, 1u);
}

TEST(SelectK, SilhouetteScoresAreThePublicFunctionsToTheBit) {
  // select_k computes the distances once for every k; silhouette() each time.
  Points p = blobs({{0, 0}, {3, 1}, {1, 4}}, 20, 0.7, 5);
  KSelection sel = select_k(p, {});
  for (std::size_t k = 2; k <= sel.kmax_used; ++k)
    EXPECT_EQ(sel.scores[k - 1].silhouette, silhouette(p, sel.fits[k - 1].assignments, k)) << "k = " << k;
}

TEST(SelectK, SharedReferenceInOneDimensionIsThePerCallOne) {
  // One table of log W_k for the unit interval serves every scale: the
  // per-call reference drawn in [lo, lo + L] with the same stream is the
  // table shifted by 2 log L, up to rounding, and the same k is chosen.
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    Gaussian g(seed);
    std::vector<double> v;
    const double scale = std::pow(10.0, static_cast<double>(seed) - 2.0);  // 0.1, 1, 10
    for (int i = 0; i < 40; ++i) v.push_back(scale * (static_cast<double>(i % 3) * 4.0 + g()));
    KSelectOptions shared, per_call;
    per_call.gap_reference = GapReference::per_call;
    KSelection a = select_k(points_1d(v), shared), b = select_k(points_1d(v), per_call);
    ASSERT_EQ(a.scores.size(), b.scores.size());
    for (std::size_t k = 0; k < a.scores.size(); ++k) {
      EXPECT_NEAR(a.scores[k].gap, b.scores[k].gap, 1e-9) << "seed " << seed << " k = " << k + 1;
      EXPECT_NEAR(a.scores[k].gap_se, b.scores[k].gap_se, 1e-9) << "seed " << seed << " k = " << k + 1;
    }
    EXPECT_EQ(a.gap_k, b.gap_k);
  }
}

TEST(SelectK, SharedReferenceInTwoDimensionsIsCloseToDrawingInTheBox) {
  // MoPE-like pairs: along omega * sigma = 5 in (log omega, log sigma), off it
  // by a spread that sets the box's aspect ratio, in 1, 2 or 4 groups. The
  // shared table, read between its shapes, against B draws in each data
  // set's own box (the same stream): the Gap(k) curves differ by a small
  // fraction of their standard errors, and the same k is chosen. (Four
  // evenly spaced groups on a line give k = 2 by the first-SE-max rule,
  // either way.)
  double worst = 0.0;  // largest |difference| / s_k
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    Gaussian g(100 + seed);
    const double off = 0.02 * static_cast<double>(seed);  // aspect ratios from ~0.01 to ~0.6
    const int groups = seed % 3 == 0 ? 4 : seed % 3 == 1 ? 1 : 2;
    Points p;
    for (int i = 0; i < 128; ++i) {
      const double along = static_cast<double>(i % groups) * 3.0 + 0.3 * g();
      const double across = off * g();
      p.push_back({along + across, std::log(5.0) - along + across});
    }
    KSelectOptions shared, per_call;
    per_call.gap_reference = GapReference::per_call;
    KSelection a = select_k(p, shared), b = select_k(p, per_call);
    ASSERT_EQ(a.scores.size(), b.scores.size());
    for (std::size_t k = 0; k < a.scores.size(); ++k) {
      worst = std::max(worst, std::fabs(a.scores[k].gap - b.scores[k].gap) / b.scores[k].gap_se);
      EXPECT_NEAR(a.scores[k].gap_se, b.scores[k].gap_se, 0.25 * b.scores[k].gap_se);
    }
    EXPECT_EQ(a.gap_k, b.gap_k) << "seed " << seed << ", " << groups << " groups";
    if (groups < 4) EXPECT_EQ(a.gap_k, static_cast<std::size_t>(groups)) << "seed " << seed;
  }
  std::printf("largest |shared - per-call Gap(k)| / s_k: %.3f\n", worst);
  EXPECT_LT(worst, 0.25);
}

TEST(SelectK, FewDistinctPointsClipKmax) {
  KSelection sel = select_k(points_1d({1, 1, 1, 1}), {});
  EXPECT_EQ(sel.kmax_used, 1u);
  EXPECT_EQ(sel.chosen_k, 1u);
}

TEST(SigmaRegion, PaperBoundaries) {
  // SPEC section 4: character [1,6), word [6,20), clause [20,55), sentence >= 55.
  EXPECT_EQ(sigma_region(0.5), SigmaRegion::below_one);
  EXPECT_EQ(sigma_region(1.0), SigmaRegion::character);
  EXPECT_EQ(sigma_region(5.999), SigmaRegion::character);
  EXPECT_EQ(sigma_region(6.0), SigmaRegion::word);
  EXPECT_EQ(sigma_region(19.99), SigmaRegion::word);
  EXPECT_EQ(sigma_region(20.0), SigmaRegion::clause);
  EXPECT_EQ(sigma_region(54.99), SigmaRegion::clause);
  EXPECT_EQ(sigma_region(55.0), SigmaRegion::sentence);
  EXPECT_EQ(sigma_region(1e4), SigmaRegion::sentence);
  EXPECT_STREQ(sigma_region_name(SigmaRegion::clause), "clause");
  EXPECT_THROW(sigma_region(0.0), egm::ConfigError);
  EXPECT_THROW(sigma_region(-2.0), egm::ConfigError);
  EXPECT_THROW(sigma_region(NAN), egm::ConfigError);
}

}  // namespace
