// The 2x2 interaction I = A + B - AB - base on data built with a known answer.
#include <gtest/gtest.h>

#include <cmath>

#include "stats/interaction.h"
#include "util/error.h"

namespace {

using namespace egm::stats;

// Cells over seeds 1..5 built from base_s = 1.5 + k_s/1024 and fixed effects
// (all multiples of 1/1024, so the arithmetic is exact in double):
//   A = base - 96/1024, B = base + 32/1024, AB = base - 64/1024 + noise - extra.
// Then A + B - AB - base = -96/1024 + 32/1024 + 64/1024 - noise + extra
//                        = extra - noise_s: with additive effects I = 0 exactly.
struct Cells {
  SeedValues base, a, b, ab;
};
Cells build(double extra) {
  const int k[5] = {0, 3, -2, 5, 1};
  const double noise[5] = {1.0 / 64, -1.0 / 64, 1.0 / 128, -1.0 / 128, 0.0};
  Cells c;
  for (int s = 0; s < 5; ++s) {
    double base = 1.5 + k[s] / 1024.0;
    c.base[s + 1] = base;
    c.a[s + 1] = base - 96 / 1024.0;
    c.b[s + 1] = base + 32 / 1024.0;
    c.ab[s + 1] = base - 64 / 1024.0 + noise[s] - extra;
  }
  return c;
}

TEST(Interaction, AdditiveDataGivesZeroAndAnIntervalAroundIt) {
  Cells c = build(0.0);
  InteractionOptions opt;
  opt.bootstrap_seed = 7;
  InteractionResult r = interaction_2x2(c.base, c.a, c.b, c.ab, opt);
  EXPECT_TRUE(r.paired);
  EXPECT_EQ(r.n, 5u);
  EXPECT_EQ(r.estimate, 0.0);  // exact by construction
  EXPECT_LT(r.interval.ci_low, 0.0);
  EXPECT_GT(r.interval.ci_high, 0.0);
  EXPECT_EQ(r.verdict, Verdict::additive_consistent);
  EXPECT_DOUBLE_EQ(r.interval.df, 4.0);
  // Deltas are improvements over base: A is 96/1024 better, B 32/1024 worse.
  EXPECT_DOUBLE_EQ(r.delta_a, 96 / 1024.0);
  EXPECT_DOUBLE_EQ(r.delta_b, -32 / 1024.0);
  EXPECT_DOUBLE_EQ(r.delta_ab, 64 / 1024.0);
  EXPECT_TRUE(r.has_bootstrap);
  EXPECT_LE(r.bootstrap.low, 0.0);
  EXPECT_GE(r.bootstrap.high, 0.0);
  EXPECT_DOUBLE_EQ(r.ratio_estimate, 1.0);
}

TEST(Interaction, ShiftedDataGivesKnownSuperadditiveInterval) {
  // AB 0.05 lower than additive: per-seed contrasts 0.05 - noise_s.
  // Interval from reference_values.py ("shifted interaction").
  Cells c = build(0.05);
  InteractionResult r = interaction_2x2(c.base, c.a, c.b, c.ab, {});
  EXPECT_NEAR(r.estimate, 0.05, 1e-12);
  EXPECT_NEAR(r.interval.ci_low, 0.0346621628009566, 1e-12);
  EXPECT_NEAR(r.interval.ci_high, 0.0653378371990434, 1e-12);
  EXPECT_EQ(r.verdict, Verdict::superadditive);
  EXPECT_EQ(r.per_seed.size(), 5u);
  // Perplexity-ratio scale is exp of the loss scale.
  EXPECT_NEAR(r.ratio_estimate, std::exp(0.05), 1e-12);
  EXPECT_NEAR(r.ratio_low, 1.03526989703097, 1e-12);
  EXPECT_GT(r.bootstrap.low, 0.0);

  Cells worse = build(-0.05);
  EXPECT_EQ(interaction_2x2(worse.base, worse.a, worse.b, worse.ab, {}).verdict, Verdict::subadditive);
}

TEST(Interaction, PaperNumbersOneSeed) {
  // SPEC section 4: 1.3821 + 1.5060 - 1.3550 - 1.4742 = +0.0589 (paper: +0.059).
  InteractionResult r = interaction_2x2({{0, 1.4742}}, {{0, 1.3821}}, {{0, 1.5060}}, {{0, 1.3550}}, {});
  EXPECT_NEAR(r.estimate, 0.0589, 1e-12);
  EXPECT_NEAR(r.delta_a, 0.0921, 1e-12);
  EXPECT_NEAR(r.delta_b, -0.0318, 1e-12);
  EXPECT_NEAR(r.delta_ab, 0.1192, 1e-12);
  EXPECT_EQ(r.verdict, Verdict::no_interval);
  EXPECT_FALSE(r.interval.has_interval);
  EXPECT_FALSE(r.has_bootstrap);
  EXPECT_STREQ(verdict_name(r.verdict), "no_interval");
}

TEST(Interaction, DifferentSeedsUseSatterthwaite) {
  // Cells on different seeds; reference_values.py ("unpaired 2x2 interaction").
  SeedValues base{{1, 1.4742}, {2, 1.4800}, {3, 1.4690}};
  SeedValues a{{1, 1.3821}, {2, 1.3712}, {3, 1.3900}, {4, 1.3850}};
  SeedValues b{{1, 1.5060}, {2, 1.5010}, {3, 1.5100}};
  SeedValues ab{{1, 1.3550}, {2, 1.3600}, {3, 1.3480}, {4, 1.3520}, {5, 1.3575}};
  InteractionResult r = interaction_2x2(base, a, b, ab, {});
  EXPECT_FALSE(r.paired);
  EXPECT_FALSE(r.has_bootstrap);
  EXPECT_NEAR(r.estimate, 0.0588416666666667, 1e-12);
  EXPECT_NEAR(r.interval.se, 0.00608879321194092, 1e-12);
  EXPECT_NEAR(r.interval.df, 8.48500258888025, 1e-9);
  EXPECT_NEAR(r.interval.ci_low, 0.0449393635479205, 1e-10);
  EXPECT_NEAR(r.interval.ci_high, 0.0727439697854128, 1e-10);
  EXPECT_NEAR(r.interval.p, 7.25406432955154e-6, 1e-12);
  EXPECT_EQ(r.verdict, Verdict::superadditive);
  EXPECT_EQ(r.n, 3u);
}

TEST(Interaction, PairingCanBeSwitchedOff) {
  Cells c = build(0.05);
  InteractionOptions opt;
  opt.pair_by_seed = false;
  InteractionResult r = interaction_2x2(c.base, c.a, c.b, c.ab, opt);
  EXPECT_FALSE(r.paired);
  EXPECT_NEAR(r.estimate, 0.05, 1e-12);
  EXPECT_NE(r.method.find("switched off"), std::string::npos);
}

TEST(Interaction, BootstrapIsReproducible) {
  Cells c = build(0.05);
  InteractionOptions opt;
  opt.bootstrap_seed = 123;
  opt.bootstrap_resamples = 2000;
  InteractionResult r1 = interaction_2x2(c.base, c.a, c.b, c.ab, opt);
  InteractionResult r2 = interaction_2x2(c.base, c.a, c.b, c.ab, opt);
  EXPECT_EQ(r1.bootstrap.low, r2.bootstrap.low);
  EXPECT_EQ(r1.bootstrap.high, r2.bootstrap.high);
  EXPECT_EQ(r1.bootstrap.resamples, 2000u);
}

TEST(Interaction, RejectsEmptyCell) {
  Cells c = build(0.0);
  EXPECT_THROW(interaction_2x2(c.base, c.a, {}, c.ab, {}), egm::ConfigError);
}

TEST(Verdict, FromInterval) {
  EXPECT_EQ(verdict_for(true, 0.01, 0.1), Verdict::superadditive);
  EXPECT_EQ(verdict_for(true, -0.1, -0.01), Verdict::subadditive);
  EXPECT_EQ(verdict_for(true, -0.1, 0.1), Verdict::additive_consistent);
  EXPECT_EQ(verdict_for(true, 0.0, 0.1), Verdict::additive_consistent);  // touches 0
  EXPECT_EQ(verdict_for(false, 0.01, 0.1), Verdict::no_interval);
}

}  // namespace
