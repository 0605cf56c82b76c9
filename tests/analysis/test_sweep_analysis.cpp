// The sweep statistics against numbers worked out by hand from the fixture
// (tests/analysis/fixture.h). Critical values and p-values come from closed
// forms, not from the code under test:
//   Student t with 2 df:  t_{p} = (2p - 1) / sqrt(2 p (1 - p)),
//                         two-sided p(t) = 1 - |t| / sqrt(2 + t^2);
//   with 4 df (A&S 26.7.3, theta = atan(t / 2)): two-sided p = 1 - sin(theta) (1 + cos^2(theta) / 2);
//   printed tables: t_{0.975,1} = 12.7062, t_{0.975,4} = 2.7764, t_{0.975,8} = 2.3060.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/render.h"
#include "analysis/sweep_analysis.h"
#include "fixture.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm;
using namespace egm::analysis;
namespace fx = egm::testing;
using egm::testing::FixtureCell;
using egm::testing::FixtureOptions;
using egm::testing::Outcome;
using egm::testing::ScratchDir;

using egm::testing::kTol;

// t_{0.975, 2} from the closed form for 2 degrees of freedom.
double t975_df2() {
  const double p = 0.975;
  return (2 * p - 1) / std::sqrt(2 * p * (1 - p));  // 4.3026527297494639
}
double p_two_sided_df2(double t) { return 1.0 - std::fabs(t) / std::sqrt(2.0 + t * t); }
double p_two_sided_df4(double t) {
  const double theta = std::atan(std::fabs(t) / 2.0);
  return 1.0 - std::sin(theta) * (1.0 + std::cos(theta) * std::cos(theta) / 2.0);
}
constexpr double kT975Df1 = 12.706204736174704;  // printed t tables
constexpr double kT975Df4 = 2.7764451051977987;
constexpr double kT975Df8 = 2.3060041350333709;

class Analysis : public ::testing::Test {
 protected:
  db::ResultsDb open(const std::string& name = "r.sqlite") {
    return db::ResultsDb(dir_.file(name), db::OpenMode::read_write_create);
  }
  ScratchDir dir_;
};

TEST_F(Analysis, TStudentClosedFormsMatchPrintedTables) {
  // Guards the reference formulas themselves against printed tables:
  // t_{0.975,2} = 4.303 (4 significant digits in every textbook table).
  EXPECT_NEAR(t975_df2(), 4.303, 5e-4);
  EXPECT_NEAR(p_two_sided_df2(t975_df2()), 0.05, 1e-12);
  EXPECT_NEAR(p_two_sided_df4(kT975Df4), 0.05, 1e-12);
}

TEST_F(Analysis, PerVariantSummariesMatchHandComputation) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  ASSERT_EQ(a.variants.size(), 4u);
  EXPECT_EQ(a.cells_total, 12u);
  EXPECT_EQ(a.cells_used, 12u);
  EXPECT_TRUE(a.excluded.empty());
  EXPECT_EQ(a.baseline, "base");
  const double t = t975_df2();
  // base 1.48, 1.50, 1.52: mean 1.50, deviations -.02 0 .02, SS .0008, var .0004, sd .02.
  const stats::Summary& base = a.find_variant("base")->at(Metric::final_val).summary;
  EXPECT_EQ(base.n, 3u);
  EXPECT_NEAR(base.mean, 1.50, kTol);
  EXPECT_NEAR(base.sd, 0.02, kTol);
  EXPECT_NEAR(base.ci_low, 1.50 - t * 0.02 / std::sqrt(3.0), kTol);  // 1.450317
  EXPECT_NEAR(base.ci_high, 1.50 + t * 0.02 / std::sqrt(3.0), kTol);
  // ega 1.40, 1.41, 1.45: mean 1.42, deviations -.02 -.01 .03, SS .0014, var .0007.
  const stats::Summary& ega = a.find_variant("ega")->at(Metric::final_val).summary;
  EXPECT_NEAR(ega.mean, 1.42, kTol);
  EXPECT_NEAR(ega.sd, std::sqrt(0.0007), kTol);
  // mope 1.51 1.53 1.52 and ega_mope 1.37 1.39 1.38: sd .01.
  EXPECT_NEAR(a.find_variant("mope")->at(Metric::final_val).summary.mean, 1.52, kTol);
  EXPECT_NEAR(a.find_variant("mope")->at(Metric::final_val).summary.sd, 0.01, kTol);
  EXPECT_NEAR(a.find_variant("ega_mope")->at(Metric::final_val).summary.mean, 1.38, kTol);
  // best_val = final - .01: same sd, mean 1.49 for base.
  const stats::Summary& best = a.find_variant("base")->at(Metric::best_val).summary;
  EXPECT_NEAR(best.mean, 1.49, kTol);
  EXPECT_NEAR(best.sd, 0.02, kTol);
  // full_val only for base and ega (final + .005); ar_val nowhere.
  EXPECT_NEAR(a.find_variant("ega")->at(Metric::full_val).summary.mean, 1.425, kTol);
  EXPECT_EQ(a.find_variant("mope")->at(Metric::full_val).summary.n, 0u);
  EXPECT_EQ(a.find_variant("base")->at(Metric::ar_val).summary.n, 0u);
  // Attention/position from the variant table.
  EXPECT_EQ(a.find_variant("ega_mope")->attention, "ega");
  EXPECT_EQ(a.find_variant("ega_mope")->position, "mope");
}

TEST_F(Analysis, PairedDeltasWithWilcoxonAndHolm) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  ASSERT_EQ(a.deltas.size(), 3u);
  const double t = t975_df2();
  // delta(ega) per seed = base - ega = .08 .09 .07: mean .08, sd .01, se .01/sqrt 3.
  const DeltaResult* ega = a.find_delta("ega");
  ASSERT_NE(ega, nullptr);
  EXPECT_TRUE(ega->paired);
  EXPECT_EQ(ega->seeds, (std::vector<int64_t>{0, 1, 2}));
  ASSERT_EQ(ega->per_seed.size(), 3u);
  EXPECT_NEAR(ega->per_seed[0], 0.08, kTol);
  EXPECT_NEAR(ega->per_seed[1], 0.09, kTol);
  EXPECT_NEAR(ega->per_seed[2], 0.07, kTol);
  EXPECT_NEAR(ega->delta.estimate, 0.08, kTol);
  EXPECT_NEAR(ega->delta.ci_low, 0.08 - t * 0.01 / std::sqrt(3.0), kTol);
  EXPECT_NEAR(ega->delta.ci_high, 0.08 + t * 0.01 / std::sqrt(3.0), kTol);
  const double t_ega = 0.08 / (0.01 / std::sqrt(3.0));  // 13.856
  EXPECT_NEAR(ega->p, p_two_sided_df2(t_ega), 1e-9);   // 0.005168
  // Wilcoxon: three positive differences, no ties: V = 1 + 2 + 3 = 6; exact
  // two-sided p = 2 * P(V >= 6) = 2 / 2^3 = 0.25.
  ASSERT_TRUE(ega->has_wilcoxon);
  EXPECT_DOUBLE_EQ(ega->wilcoxon.v, 6.0);
  EXPECT_NEAR(ega->wilcoxon.p, 0.25, 1e-12);
  // delta(mope) = -.03 -.03 0: mean -.02, sd sqrt(.0006/2) = .017321, se .01, t = -2.
  const DeltaResult* mope = a.find_delta("mope");
  EXPECT_NEAR(mope->delta.estimate, -0.02, kTol);
  EXPECT_NEAR(mope->p, p_two_sided_df2(2.0), 1e-9);  // 0.1835
  // delta(ega_mope) = .11 .11 .14: mean .12, se .01, t = 12.
  const DeltaResult* both = a.find_delta("ega_mope");
  EXPECT_NEAR(both->delta.estimate, 0.12, kTol);
  EXPECT_NEAR(both->p, p_two_sided_df2(12.0), 1e-9);  // 0.006873
  // Holm: sorted p = ega .005168 (x3), ega_mope .006873 (x2), mope .1835 (x1),
  // made monotone: ega .015504, ega_mope max(.015504, .013746), mope .1835.
  const double p1 = 3 * p_two_sided_df2(t_ega);
  EXPECT_NEAR(ega->p_holm, p1, 1e-9);
  EXPECT_NEAR(both->p_holm, std::max(p1, 2 * p_two_sided_df2(12.0)), 1e-9);
  EXPECT_NEAR(mope->p_holm, p_two_sided_df2(2.0), 1e-9);
}

TEST_F(Analysis, InteractionPairedOverSeedsWithVerdictAndRatio) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  ASSERT_TRUE(a.interaction.has_value());
  const stats::InteractionResult& r = a.interaction->result;
  // Per seed c = ega + mope - ega_mope - base:
  //   s0 1.40 + 1.51 - 1.37 - 1.48 = .06; s1 1.41 + 1.53 - 1.39 - 1.50 = .05; s2 1.45 + 1.52 - 1.38 - 1.52 = .07.
  ASSERT_EQ(r.per_seed.size(), 3u);
  EXPECT_NEAR(r.per_seed[0], 0.06, kTol);
  EXPECT_NEAR(r.per_seed[1], 0.05, kTol);
  EXPECT_NEAR(r.per_seed[2], 0.07, kTol);
  EXPECT_TRUE(r.paired);
  EXPECT_EQ(r.n, 3u);
  EXPECT_NEAR(r.estimate, 0.06, kTol);
  EXPECT_NEAR(r.interval.df, 2.0, kTol);
  const double half = t975_df2() * 0.01 / std::sqrt(3.0);  // .024841
  EXPECT_NEAR(r.interval.ci_low, 0.06 - half, kTol);
  EXPECT_NEAR(r.interval.ci_high, 0.06 + half, kTol);
  EXPECT_EQ(r.verdict, stats::Verdict::superadditive);
  EXPECT_NEAR(r.ratio_estimate, std::exp(0.06), kTol);
  EXPECT_NEAR(r.ratio_low, std::exp(0.06 - half), kTol);
  // The bootstrap resamples the three contrasts: its interval lies within [min, max] = [.05, .07].
  ASSERT_TRUE(r.has_bootstrap);
  EXPECT_GE(r.bootstrap.low, 0.05 - kTol);
  EXPECT_LE(r.bootstrap.high, 0.07 + kTol);
  EXPECT_EQ(r.bootstrap.seed, 12345u);
  // Sum of the parts per seed 2 base - ega - mope = .05 .06 .07: mean .06, sd .01.
  EXPECT_NEAR(a.interaction->sum_of_parts.estimate, 0.06, kTol);
  EXPECT_NEAR(a.interaction->sum_of_parts.ci_high, 0.06 + half, kTol);
  // delta(ab) = sum of parts + I: .12 = .06 + .06.
  EXPECT_NEAR(r.delta_ab, a.interaction->sum_of_parts.estimate + r.estimate, kTol);
  EXPECT_NE(a.interaction->verdict_text.find("superadditive"), std::string::npos);
}

TEST_F(Analysis, PublishedNumbersSideBySide) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  ASSERT_TRUE(a.published.has_value());
  const PublishedComparison& p = *a.published;
  ASSERT_EQ(p.rows.size(), 4u);
  const double t = t975_df2();
  auto row = [&](const std::string& v) {
    for (const auto& r : p.rows)
      if (r.variant == v) return r;
    throw std::runtime_error("no row " + v);
  };
  // base CI [1.450317, 1.549683] holds 1.4742.
  EXPECT_TRUE(row("base").inside_ci);
  // ega CI 1.42 +- t sqrt(.0007/3) = [1.354276, 1.485724] holds 1.3821.
  EXPECT_TRUE(row("ega").inside_ci);
  // mope CI 1.52 +- .024841 = [1.495159, 1.544841] holds 1.5060.
  EXPECT_TRUE(row("mope").inside_ci);
  // ega_mope CI 1.38 +- .024841 = [1.355159, 1.404841] misses 1.3550 by .00016 ...
  EXPECT_FALSE(row("ega_mope").inside_ci);
  // ... but the one-seed prediction interval 1.38 +- t * .01 * sqrt(1 + 1/3) = [1.330317, 1.429683] holds it.
  EXPECT_NEAR(row("ega_mope").prediction_low, 1.38 - t * 0.01 * std::sqrt(4.0 / 3.0), kTol);
  EXPECT_TRUE(row("ega_mope").inside_prediction);
  // Published delta(ega) = 1.4742 - 1.3821 = .0921, inside our paired [.055159, .104841].
  ASSERT_TRUE(row("ega").published_delta.has_value());
  EXPECT_NEAR(*row("ega").published_delta, 0.0921, kTol);
  EXPECT_TRUE(row("ega").delta_inside);
  // Published I = 1.3821 + 1.5060 - 1.3550 - 1.4742 = +0.0589, inside [.035159, .084841].
  ASSERT_TRUE(p.published_interaction.has_value());
  EXPECT_NEAR(*p.published_interaction, 0.0589, kTol);
  EXPECT_TRUE(p.interaction_inside);
}

TEST_F(Analysis, WelchAndSatterthwaiteWhenSeedsDiffer) {
  db::ResultsDb db = open();
  // Each variant on its own seeds, every cell sd .02 (n = 3), so the
  // Welch-Satterthwaite df are whole numbers: 4 for a delta, 8 for I.
  std::vector<FixtureCell> cells;
  const std::map<std::string, std::pair<int64_t, std::vector<double>>> table{
      {"base", {0, {1.48, 1.50, 1.52}}},
      {"ega", {10, {1.40, 1.42, 1.44}}},
      {"mope", {20, {1.50, 1.52, 1.54}}},
      {"ega_mope", {30, {1.36, 1.38, 1.40}}}};
  for (const auto& [variant, seeds] : table)
    for (int64_t i = 0; i < 3; ++i) {
      FixtureCell c;
      c.variant = variant;
      c.seed = seeds.first + i;
      c.final_val = seeds.second[static_cast<size_t>(i)];
      c.info = fx::single_rank();
      c.params = false;
      cells.push_back(c);
    }
  fx::write_cells(db, "unpaired", fx::main_spec_json("unpaired", {0}), cells);
  const SweepAnalysis a = analyze_sweep(db, "unpaired");
  // delta(ega) = 1.50 - 1.42 = .08, se = sqrt(.0004/3 + .0004/3) = .016330,
  // df = (2v)^2 / (2 v^2 / 2) = 4.
  const DeltaResult* ega = a.find_delta("ega");
  ASSERT_NE(ega, nullptr);
  EXPECT_FALSE(ega->paired);
  EXPECT_NEAR(ega->delta.estimate, 0.08, kTol);
  const double se = std::sqrt(2 * 0.0004 / 3);
  EXPECT_NEAR(ega->delta.se, se, kTol);
  EXPECT_NEAR(ega->delta.df, 4.0, 1e-9);
  EXPECT_NEAR(ega->delta.ci_low, 0.08 - kT975Df4 * se, 1e-9);
  EXPECT_NEAR(ega->p, p_two_sided_df4(0.08 / se), 1e-9);  // t = 4.899, p = 0.00805
  EXPECT_NE(ega->method.find("Welch"), std::string::npos);
  EXPECT_FALSE(ega->has_wilcoxon);
  // I = 1.42 + 1.52 - 1.38 - 1.50 = .06, se = sqrt(4 * .0004/3) = .023094, df = (4v)^2 / (4 v^2 / 2) = 8.
  ASSERT_TRUE(a.interaction.has_value());
  const stats::InteractionResult& r = a.interaction->result;
  EXPECT_FALSE(r.paired);
  EXPECT_NEAR(r.estimate, 0.06, kTol);
  const double se_i = std::sqrt(4 * 0.0004 / 3);
  EXPECT_NEAR(r.interval.df, 8.0, 1e-9);
  EXPECT_NEAR(r.interval.ci_low, 0.06 - kT975Df8 * se_i, 1e-9);  // .006745
  EXPECT_EQ(r.verdict, stats::Verdict::superadditive);
  EXPECT_FALSE(r.has_bootstrap);
  // Sum of parts 2 base - ega - mope = .06: variances 4 * .0004/3, .0004/3,
  // .0004/3 sum to .0008; df = .0008^2 / ((.000533^2 + 2 * .000133^2) / 2) = 4.
  EXPECT_NEAR(a.interaction->sum_of_parts.estimate, 0.06, kTol);
  EXPECT_NEAR(a.interaction->sum_of_parts.df, 4.0, 1e-9);
  EXPECT_NEAR(a.interaction->sum_of_parts.ci_high, 0.06 + kT975Df4 * std::sqrt(0.0008), 1e-9);
}

TEST_F(Analysis, PairsOverTheSharedSeedsWhenACellFailed) {
  db::ResultsDb db = open();
  FixtureOptions o;
  o.replace_keys = {"ega-s2"};
  FixtureCell failed;
  failed.variant = "ega";
  failed.seed = 2;
  failed.outcome = Outcome::failed_exhausted;
  failed.info = fx::single_rank();
  o.extra_cells = {failed};
  fx::write_fixture(db, o);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  EXPECT_EQ(a.cells_used, 11u);
  ASSERT_EQ(a.excluded.size(), 1u);
  // delta(ega) over seeds 0, 1: .08, .09 -> mean .085, sd .0070711, df 1; seed 2 of base unused.
  const DeltaResult* ega = a.find_delta("ega");
  EXPECT_TRUE(ega->paired);
  EXPECT_EQ(ega->seeds, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ega->unmatched_seeds, (std::vector<int64_t>{2}));
  EXPECT_NEAR(ega->delta.estimate, 0.085, kTol);
  EXPECT_NEAR(ega->delta.ci_high, 0.085 + kT975Df1 * (0.01 / std::sqrt(2.0)) / std::sqrt(2.0), 1e-9);
  // The interaction pairs over seeds 0, 1: contrasts .06, .05, mean .055,
  // sd .0070711, half-width 12.706 * .005 = .063531: the interval now
  // includes 0, so the verdict is additive-consistent.
  const stats::InteractionResult& r = a.interaction->result;
  EXPECT_TRUE(r.paired);
  EXPECT_EQ(r.n, 2u);
  EXPECT_NEAR(r.estimate, 0.055, kTol);
  EXPECT_NEAR(r.interval.ci_low, 0.055 - kT975Df1 * 0.005, 1e-9);
  EXPECT_EQ(r.verdict, stats::Verdict::additive_consistent);
  EXPECT_EQ(a.interaction->unmatched_seeds, (std::vector<int64_t>{2}));
  // base still summarises all three of its seeds.
  EXPECT_EQ(a.find_variant("base")->at(Metric::final_val).summary.n, 3u);
}

TEST_F(Analysis, OneSeedSaysThatNoIntervalExists) {
  db::ResultsDb db = open();
  FixtureOptions o;
  o.seeds = {0};
  fx::write_fixture(db, o);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  const stats::Summary& base = a.find_variant("base")->at(Metric::final_val).summary;
  EXPECT_EQ(base.n, 1u);
  EXPECT_FALSE(base.has_interval);
  const DeltaResult* ega = a.find_delta("ega");
  EXPECT_NEAR(ega->delta.estimate, 0.08, kTol);
  EXPECT_FALSE(ega->delta.has_interval);
  EXPECT_TRUE(std::isnan(ega->p));
  ASSERT_TRUE(a.interaction.has_value());
  // s0 alone: 1.40 + 1.51 - 1.37 - 1.48 = .06, no interval.
  EXPECT_NEAR(a.interaction->result.estimate, 0.06, kTol);
  EXPECT_EQ(a.interaction->result.verdict, stats::Verdict::no_interval);
  const std::string text = render_main_table(a);
  EXPECT_NE(text.find("no interval exists"), std::string::npos) << text;
  EXPECT_NE(text.find("no verdict"), std::string::npos) << text;
  EXPECT_EQ(text.find("t interval ["), std::string::npos) << text;
  EXPECT_NE(text.find("base: 1.4800 (1 seed, no interval)"), std::string::npos) << text;  // seed 0 alone
  EXPECT_FALSE(a.published->rows.front().inside_ci);
  EXPECT_FALSE(a.published->rows.front().has_interval);
}

TEST_F(Analysis, ExcludedCellsAreCountedWithTheirReasons) {
  db::ResultsDb db = open();
  FixtureOptions o;
  auto cell = [](const std::string& v, Outcome outcome) {
    FixtureCell c;
    c.variant = v;
    c.seed = 3;
    c.outcome = outcome;
    c.info = fx::single_rank();
    return c;
  };
  o.extra_cells = {cell("base", Outcome::failed_exhausted), cell("ega", Outcome::failed_retry),
                   cell("mope", Outcome::running), cell("ega_mope", Outcome::interrupted)};
  fx::write_fixture(db, o);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  EXPECT_EQ(a.cells_total, 16u);
  EXPECT_EQ(a.cells_used, 12u);
  ASSERT_EQ(a.excluded.size(), 4u);
  std::map<std::string, std::string> reason;
  for (const auto& e : a.excluded) reason[e.key] = e.reason;
  EXPECT_NE(reason["base-s3"].find("out of retries (1/1"), std::string::npos) << reason["base-s3"];
  EXPECT_NE(reason["base-s3"].find("loss became NaN"), std::string::npos);
  EXPECT_NE(reason["ega-s3"].find("will be retried"), std::string::npos) << reason["ega-s3"];
  EXPECT_NE(reason["mope-s3"].find("running"), std::string::npos);
  EXPECT_NE(reason["ega_mope-s3"].find("interrupted"), std::string::npos);
  // The numbers are those of the 12 done cells.
  EXPECT_NEAR(a.interaction->result.estimate, 0.06, kTol);
  EXPECT_EQ(a.interaction->result.n, 3u);
  const std::string text = render_main_table(a);
  EXPECT_NE(text.find("12 of 16 used"), std::string::npos) << text;
  EXPECT_NE(text.find("4 excluded (2 failed, 1 interrupted, 1 running)"), std::string::npos) << text;
  // A metric nobody measured leaves every done cell out, saying why.
  AnalysisOptions ar;
  ar.metric = Metric::ar_val;
  const SweepAnalysis b = analyze_sweep(db, "fixture", ar);
  EXPECT_EQ(b.cells_used, 0u);
  EXPECT_EQ(b.excluded.size(), 16u);
  EXPECT_FALSE(b.interaction.has_value());
  EXPECT_NE(b.no_interaction_reason.find("no done cell with ar_val"), std::string::npos);
}

TEST_F(Analysis, MixedWorldSizesAreRefusedUnlessAllowed) {
  db::ResultsDb db = open();
  fx::write_fixture(db, fx::mixed_world_size_options());
  try {
    analyze_sweep(db, "fixture");
    FAIL() << "mixed world sizes were paired";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ega-s1: world 2 / mpi"), std::string::npos) << what;
    EXPECT_NE(what.find("base-s1: world 1 / none"), std::string::npos) << what;
    EXPECT_NE(what.find("--allow-mixed-world-size"), std::string::npos) << what;
  }
  AnalysisOptions allow;
  allow.allow_mixed_setups = true;
  const SweepAnalysis a = analyze_sweep(db, "fixture", allow);
  // delta(ega) seed 1 and the interaction at seed 1.
  ASSERT_EQ(a.setup_conflicts.size(), 2u);
  EXPECT_EQ(a.setup_conflicts[0].comparison, "delta(ega) seed 1");
  EXPECT_EQ(a.setup_conflicts[1].comparison, "interaction seed 1");
  EXPECT_NEAR(a.interaction->result.estimate, 0.06, kTol);
  EXPECT_NE(render_main_table(a).find("WARNING"), std::string::npos);
}

// A CUDA cell paired with CPU cells (same world size and backend) is refused on its
// own flag: --allow-mixed-world-size does not cover it, --allow-mixed-device does.
TEST_F(Analysis, MixedDevicesAreRefusedUnlessAllowed) {
  db::ResultsDb db = open();
  FixtureOptions o;
  db::RunInfo gpu = fx::single_rank();
  gpu.device = egm::parse_device_name("cuda:1");
  o.setups["ega-s1"] = gpu;
  fx::write_fixture(db, o);
  for (bool allow_world : {false, true}) {
    AnalysisOptions opt;
    opt.allow_mixed_setups = allow_world;
    try {
      analyze_sweep(db, "fixture", opt);
      FAIL() << "CPU and CUDA cells were paired";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("different devices (2 comparisons)"), std::string::npos) << what;
      EXPECT_NE(what.find("ega-s1: world 1 / none on cuda"), std::string::npos) << what;
      EXPECT_NE(what.find("base-s1: world 1 / none on cpu"), std::string::npos) << what;
      EXPECT_NE(what.find("--allow-mixed-device"), std::string::npos) << what;
    }
  }
  AnalysisOptions allow;
  allow.allow_mixed_devices = true;
  const SweepAnalysis a = analyze_sweep(db, "fixture", allow);
  ASSERT_EQ(a.setup_conflicts.size(), 2u);
  EXPECT_TRUE(a.setup_conflicts[0].mixed_device);
  EXPECT_FALSE(a.setup_conflicts[0].mixed_world);
  EXPECT_NE(render_main_table(a).find("WARNING"), std::string::npos);
}

// Cells trained by other code (another commit, a modified tree, another
// LibTorch) are paired, but every comparison that mixes them says so, naming
// the cells of each kind; comparisons that do not touch them say nothing.
TEST_F(Analysis, ComparisonsOverCellsOfDifferentCodeAreFlaggedNamingTheCells) {
  db::ResultsDb db = open();
  FixtureOptions o;
  db::RunInfo modified = fx::single_rank();
  modified.git_commit = "fixture-dirty";
  modified.source_diff_sha256 = "3f2a9c1b7d0e" + std::string(52, '0');
  o.setups["ega-s1"] = modified;
  db::RunInfo other_torch = fx::single_rank();
  other_torch.torch_version = "2.12.0";
  o.setups["ega_mope-s2"] = other_torch;
  fx::write_fixture(db, o);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  // ega's cells, and everything pairing them, mix two builds; ega_mope's mix LibTorch versions.
  std::map<std::string, const ProvenanceMix*> by;
  for (const ProvenanceMix& m : a.provenance)
    for (const std::string& c : m.comparisons) by[c] = &m;
  EXPECT_EQ(by.count("base"), 0u);
  EXPECT_EQ(by.count("mope"), 0u);
  EXPECT_EQ(by.count("delta(mope)"), 0u);
  ASSERT_EQ(by.count("ega"), 1u);
  ASSERT_EQ(by.count("delta(ega)"), 1u);
  ASSERT_EQ(by.count("ega_mope"), 1u);
  ASSERT_EQ(by.count("interaction"), 1u);
  const ProvenanceMix& ega = *by.at("ega");
  ASSERT_EQ(ega.groups.size(), 2u);
  const ProvenanceGroup& dirty = ega.groups[0].provenance.commit == "fixture-dirty" ? ega.groups[0] : ega.groups[1];
  EXPECT_EQ(dirty.cells, std::vector<std::string>{"ega-s1"});
  EXPECT_EQ(dirty.provenance.diff_sha256, *modified.source_diff_sha256);
  const ProvenanceMix& inter = *by.at("interaction");
  EXPECT_EQ(inter.groups.size(), 3u);  // the fixture's build, the modified one, the other LibTorch
  EXPECT_NE(inter.text().find("LibTorch 2.12.0"), std::string::npos) << inter.text();
  EXPECT_NE(inter.text().find("(diff 3f2a9c1b7d0e)"), std::string::npos) << inter.text();
  const std::string headline = render_main_table(a);
  EXPECT_NE(headline.find("WARNING: trained by different code: ega"), std::string::npos) << headline;
  EXPECT_NE(render_analysis(a, OutputFormat::json).find("\"diff_sha256\": \"3f2a9c1b7d0e"), std::string::npos);
  // The fixture with one build: nothing to say.
  db::ResultsDb clean = open("clean.sqlite");
  fx::write_fixture(clean, FixtureOptions{});
  EXPECT_TRUE(analyze_sweep(clean, "fixture").provenance.empty());
}

TEST_F(Analysis, ACellResumedUnderAnotherBackendConflictsByItself) {
  db::ResultsDb db = open();
  FixtureOptions o;
  o.replace_keys = {"mope-s0"};
  FixtureCell c = fx::main_cells({0})[2];  // mope-s0
  ASSERT_EQ(c.variant, "mope");
  db::RunInfo nccl = fx::single_rank();
  nccl.backend = egm::Backend::nccl;
  c.resumed_from = nccl;
  o.extra_cells = {c};
  fx::write_fixture(db, o);
  EXPECT_THROW(analyze_sweep(db, "fixture"), ConfigError);
  // Unaffected: the same sweep with a resumed attempt on the same setup.
  db::ResultsDb other(dir_.file("o.sqlite"), db::OpenMode::read_write_create);
  c.resumed_from = fx::single_rank();
  o.extra_cells = {c};
  fx::write_fixture(other, o);
  EXPECT_NO_THROW(analyze_sweep(other, "fixture"));
}

TEST_F(Analysis, BootstrapAndOutputAreReproducible) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  const SweepAnalysis first = analyze_sweep(db, "fixture");
  const SweepAnalysis second = analyze_sweep(db, "fixture");
  EXPECT_EQ(first.interaction->result.bootstrap.low, second.interaction->result.bootstrap.low);
  EXPECT_EQ(first.interaction->result.bootstrap.high, second.interaction->result.bootstrap.high);
  EXPECT_EQ(to_json(first).dump(), to_json(second).dump());
  EXPECT_EQ(render_text(first), render_text(second));
}

TEST_F(Analysis, FactorsFromTheCommandLineAndUnknownSweeps) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  AnalysisOptions o;
  o.factors = parse_factors("ega, mope ,ega_mope,base");
  EXPECT_NO_THROW(analyze_sweep(db, "fixture", o));
  o.factors = parse_factors("ega,mope,rope,base");
  EXPECT_THROW(analyze_sweep(db, "fixture", o), ConfigError);
  EXPECT_THROW(parse_factors("ega,mope"), ConfigError);
  EXPECT_THROW(parse_metric("val"), ConfigError);
  try {
    analyze_sweep(db, "nope");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("sweeps: fixture"), std::string::npos) << e.what();
  }
}

// The metrics are the measurements run/outcome.h marks analysable, in its
// order, each read from the cell's own field: nothing lists them again.
TEST(Metrics, AreTheAnalysableMeasurementsInTheirOrder) {
  std::vector<std::string> expected;
  for (const MeasurementField& f : kMeasurementFields)
    if (f.statistic != nullptr) expected.push_back(f.name);
  std::vector<std::string> names;
  for (Metric m : all_metrics()) {
    names.push_back(metric_name(m));
    EXPECT_EQ(parse_metric(metric_name(m)), m);
    EXPECT_STREQ(metric_description(m), metric_field(m).statistic);
  }
  EXPECT_EQ(names, expected);
  EXPECT_EQ(names, (std::vector<std::string>{"final_val", "best_val", "full_val", "ar_val"}));
  EXPECT_EQ(metric_choices(), "final_val, best_val, full_val or ar_val");
  EXPECT_EQ(Metric::final_val.index(), 0);
  EXPECT_EQ(metric_name(Metric::ar_val), std::string("ar_val"));
  // A stored-only measurement (no statistic) is not a metric.
  EXPECT_THROW(parse_metric("ar_ref_val"), ConfigError);
  EXPECT_THROW(parse_metric("tokens_per_s"), ConfigError);
  CellData cell;
  cell.row.results.full_val = 2.5;
  EXPECT_EQ(cell.value(Metric::full_val), 2.5);
  EXPECT_FALSE(cell.value(Metric::ar_val).has_value());
}

TEST_F(Analysis, MainTableAndRenderersShowTheNumbers) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  const std::string text = render_main_table(db, "fixture");
  // base 1.50 +- 4.302653 * .02 / sqrt 3 = 1.5000 +- 0.0497 (3); ega_mope 1.3800 +- 0.0248.
  EXPECT_NE(text.find("base: 1.5000 ± 0.0497 (3)"), std::string::npos) << text;
  EXPECT_NE(text.find("ega_mope: 1.3800 ± 0.0248 (3)"), std::string::npos) << text;
  // I = +0.0600, 95% t interval [+0.0352, +0.0848].
  EXPECT_NE(text.find("= +0.0600"), std::string::npos) << text;
  EXPECT_NE(text.find("[+0.0352, +0.0848]"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict: superadditive"), std::string::npos) << text;
  EXPECT_NE(text.find("published I = +0.0589"), std::string::npos) << text;
  EXPECT_NE(text.find("inside our interval"), std::string::npos) << text;
  // egm analyze prints the same headline first.
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  EXPECT_EQ(render_text(a).rfind(render_main_table(a), 0), 0u);
  const std::string csv = render_analysis(a, OutputFormat::csv);
  EXPECT_EQ(csv.rfind("variant,attention,position,n,mean,sd,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\ninteraction,"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(render_analysis(a, OutputFormat::json));
  EXPECT_NEAR(j["interaction"]["estimate"].get<double>(), 0.06, kTol);
  EXPECT_EQ(j["interaction"]["verdict"], "superadditive");
  const std::string md = render_analysis(a, OutputFormat::markdown);
  EXPECT_NE(md.find("| ega_mope | ega | mope | 1.3800 ± 0.0248 (3) | +0.1200 ± 0.0430 |"), std::string::npos)
      << md;  // delta .12 +- 4.302653 * .017321 / sqrt 3 = .12 +- .0430
}

}  // namespace

namespace {

// Strongly skewed per-seed contrasts are said in the notes, per claim (issue 36).
TEST(SweepAnalysisSkew, StronglySkewedContrastsAreNoted) {
  using namespace egm::analysis;
  SweepData data;
  data.sweep.name = "skew";
  data.spec.variants = {"base", "ega"};
  data.spec.baseline = "base";
  const std::vector<double> base = {2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0};
  const std::vector<double> ega = {1.99, 2.0, 1.98, 1.995, 2.005, 1.99, 1.4};  // one seed far better: skewed
  for (int s = 0; s < 7; ++s) {
    for (const auto& [variant, values] : {std::pair{"base", base}, std::pair{"ega", ega}}) {
      CellData c;
      c.row.key = std::string(variant) + "-s" + std::to_string(s);
      c.row.variant = variant;
      c.row.seed = s;
      c.row.status = egm::db::CellStatus::done;
      c.row.results.final_val = values[static_cast<size_t>(s)];
      data.cells.push_back(c);
    }
    data.spec.seeds.push_back(static_cast<uint64_t>(s));
  }
  AnalysisOptions o;
  o.analyse_params = false;
  const SweepAnalysis a = analyze_sweep(data, o);
  bool noted = false;
  for (const std::string& n : a.notes) noted = noted || n.rfind("delta(ega): its 7 per-seed contrasts are strongly skewed", 0) == 0;
  EXPECT_TRUE(noted) << (a.notes.empty() ? "no notes" : a.notes.front());
  // The same contrasts without the outlying seed: no note.
  data.cells[13].row.results.final_val = 1.99;
  const SweepAnalysis b = analyze_sweep(data, o);
  for (const std::string& n : b.notes) EXPECT_EQ(n.find("strongly skewed"), std::string::npos) << n;
}

}  // namespace
