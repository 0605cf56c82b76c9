// egm plan's numbers worked out by hand on the fixture sweep (fixture.h):
// the seeds per claim, the cells to add, and the compute they imply from a
// compute statement with known per-cell costs; the too-small pilot; refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/plan.h"
#include "stats/power.h"
#include "fixture.h"
#include "test_helpers.h"
#include "util/error.h"

namespace egm::analysis {
namespace {

namespace fx = egm::testing;

class Plan : public ::testing::Test {
 protected:
  db::ResultsDb open() { return db::ResultsDb(dir_.file("p.sqlite"), db::OpenMode::read_write_create); }
  fx::ScratchDir dir_;
};

TEST_F(Plan, HandWorkedSeedsCellsAndCompute) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  const SweepData data = load_sweep(db, "fixture", false);
  AnalysisOptions ao;
  ao.analyse_params = false;
  const SweepAnalysis a = analyze_sweep(data, ao);
  // Known costs: every base cell 100 core-s, every ega cell 1 H200 GPU-hour; mope and ega_mope not timed.
  ComputeStatement compute;
  for (const CellData& c : data.cells) {
    ComputeTotals t;
    t.runs = 1;
    if (c.row.variant == "base") t.core_seconds = 100;
    if (c.row.variant == "ega") t.gpu_seconds["NVIDIA H200"] = 3600;
    if (c.row.variant == "base" || c.row.variant == "ega") compute.cells[c.row.id] = t;
  }
  PlanOptions o;
  o.half_width = 0.01;
  o.claims = {"ega"};
  // delta(ega) = 0.08, 0.09, 0.07: mean 0.08, sd 0.01. One claim at alpha 0.05: n = 7
  // (t_{0.975,6} / sqrt 7 = 0.925 <= 1 < t_{0.975,5} / sqrt 6 = 1.050), 4 more per variant.
  SweepPlan p = plan_from_analysis(data, a, compute, o);
  ASSERT_EQ(p.claims.size(), 1u);
  const ClaimPlan& c = p.claims[0];
  EXPECT_EQ(c.name, "delta(ega)");
  EXPECT_EQ(c.pilot_seeds, 3u);
  EXPECT_NEAR(c.estimate, 0.08, 1e-12);
  EXPECT_NEAR(c.sd, 0.01, 1e-12);
  EXPECT_DOUBLE_EQ(c.claim_alpha, 0.05);
  // Now: t_{0.975,2} * 0.01 / sqrt 3 = 4.302653 * 0.0057735 = 0.024841.
  EXPECT_NEAR(c.half_width_now, 4.302652729749464 * 0.01 / std::sqrt(3.0), 1e-12);
  EXPECT_EQ(c.seeds_for_half_width, 7u);
  EXPECT_EQ(p.seeds_needed, 7u);
  ASSERT_EQ(p.variants.size(), 2u);
  EXPECT_EQ(p.variants[0].variant, "base");
  EXPECT_EQ(p.variants[0].seeds_done, 3u);
  EXPECT_EQ(p.variants[0].cells_to_add, 4u);
  EXPECT_EQ(p.cells_to_add, 8u);
  // 4 x 100 core-s and 4 x 1 GPU-hour.
  EXPECT_DOUBLE_EQ(p.implied.core_seconds, 400);
  EXPECT_DOUBLE_EQ(p.implied.gpu_seconds.at("NVIDIA H200"), 4 * 3600);
  EXPECT_EQ(p.implied.runs, 8);
  EXPECT_FALSE(p.uncosted);
  EXPECT_EQ(compute_line(p.implied), "8 runs, 4.0 GPU-hours on NVIDIA H200; 0.11 core-hours of CPU");

  // The interaction too: two claims at 0.025 each; the untimed mope / ega_mope make the compute partial.
  o.claims = {"delta(ega)", "interaction"};
  o.effect = 0.02;
  p = plan_from_analysis(data, a, compute, o);
  ASSERT_EQ(p.claims.size(), 2u);
  EXPECT_DOUBLE_EQ(p.claims[1].claim_alpha, 0.025);
  EXPECT_NEAR(p.claims[1].estimate, 0.06, 1e-12);
  EXPECT_NEAR(p.claims[1].effect_sd, 2.0, 1e-9);
  EXPECT_EQ(p.variants.size(), 4u);
  EXPECT_TRUE(p.uncosted);
  EXPECT_EQ(p.seeds_needed, std::max(*p.claims[0].seeds(), *p.claims[1].seeds()));
}

TEST_F(Plan, TooSmallPilotIsSaidPlainly) {
  db::ResultsDb db = open();
  fx::FixtureOptions two;
  two.seeds = {0, 1};
  fx::write_fixture(db, two);
  PlanOptions o;
  o.effect = 0.02;
  const std::vector<SweepPlan> plans = plan_sweep(db, "fixture", o);
  ASSERT_EQ(plans.size(), 1u);
  for (const ClaimPlan& c : plans[0].claims) {
    EXPECT_TRUE(c.too_small) << c.name;
    EXPECT_EQ(c.pilot_seeds, 2u);
    EXPECT_NE(c.note.find("fewer than 3 cannot estimate the variance"), std::string::npos) << c.note;
    EXPECT_FALSE(c.seeds());
  }
  EXPECT_EQ(plans[0].seeds_needed, 0u);
  EXPECT_NE(render_plan_text(plans).find("no claim has a pilot to plan from"), std::string::npos);
}

TEST_F(Plan, Refusals) {
  db::ResultsDb db = open();
  fx::write_fixture(db);
  fx::write_cells(db, "pair", R"({"name": "pair", "variants": ["base", "ega"], "seeds": [0, 1, 2]})",
                  fx::pair_cells({0, 1, 2}));
  PlanOptions o;
  EXPECT_THROW(plan_sweep(db, "fixture", o), ConfigError);  // no goal
  o.half_width = 0.0;
  EXPECT_THROW(plan_sweep(db, "fixture", o), ConfigError);
  o.half_width = 0.01;
  o.alpha = 0.5;
  EXPECT_THROW(plan_sweep(db, "fixture", o), ConfigError);
  o.alpha = 0.05;
  o.claims = {"interaction"};
  EXPECT_NO_THROW(plan_sweep(db, "fixture", o));
  // An interaction without factors: the two-variant sweep cannot form it.
  try {
    plan_sweep(db, "pair", o);
    FAIL() << "planned an interaction without factors";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("has no 2x2 interaction"), std::string::npos) << e.what();
  }
  o.claims = {"mope"};
  try {
    plan_sweep(db, "pair", o);
    FAIL() << "planned an unknown claim";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("it can form delta(ega)"), std::string::npos) << e.what();
  }
  o.claims = {};
  EXPECT_THROW(plan_sweep(db, "nope", o), ConfigError);
}

TEST(PlanGrid, EachPointOnItsOwnCells) {
  // Two grid points: at point 0 the fixture's delta(ega) (sd 0.01); at point 1
  // ega is worse by 0.04, 0.05, 0.07 (sd 0.015275).
  SweepData d;
  d.sweep.id = 1;
  d.sweep.name = "g";
  d.spec.variants = {"base", "ega"};
  d.spec.seeds = {0, 1, 2};
  d.spec.baseline = "base";
  int64_t id = 0;
  for (int64_t point = 0; point < 2; ++point)
    for (const std::string v : {"base", "ega"})
      for (int64_t seed = 0; seed < 3; ++seed) {
        CellData c;
        c.row.id = ++id;
        c.row.sweep_id = 1;
        c.row.position = id - 1;
        c.row.variant = v;
        c.row.seed = seed;
        c.row.key = v + "-s" + std::to_string(seed) + "-g" + std::to_string(point);
        c.row.status = db::CellStatus::done;
        const double base = fx::fixture_final("base", seed);
        c.row.results.final_val = point == 0 || v == "base" ? fx::fixture_final(v, seed)
                                                            : base + std::vector<double>{0.04, 0.05, 0.07}[seed];
        c.row.grid_point = point;
        c.row.grid_json = nlohmann::json{{"train.lr", point == 0 ? 0.001 : 0.003}}.dump();
        c.setups = {RunSetup{1, "none", ""}};
        d.cells.push_back(c);
      }
  PlanOptions o;
  o.half_width = 0.01;
  const std::vector<SweepPlan> plans = plan_data(d, {}, o);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].point, "train.lr=0.001");
  EXPECT_EQ(plans[1].point, "train.lr=0.003");
  EXPECT_EQ(plans[0].seeds_needed, 7u);
  EXPECT_NEAR(plans[1].claims[0].estimate, -0.05333333333333, 1e-10);
  EXPECT_EQ(plans[1].seeds_needed, stats::seeds_for_half_width(plans[1].claims[0].sd, 0.01, 0.05));
  EXPECT_GT(plans[1].seeds_needed, plans[0].seeds_needed);
  EXPECT_TRUE(plans[1].uncosted);  // no compute statement given
  EXPECT_NE(render_plan_text(plans).find("plan for sweep g at train.lr=0.003"), std::string::npos);
}

}  // namespace
}  // namespace egm::analysis
