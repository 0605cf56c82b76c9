// Grid sweeps: each point analysed on its own cells, and the across-points
// rows (means, deltas, interaction) with their intervals; the renderers and
// the report folder. Point 0 holds the main fixture's numbers (fixture.h), so
// its results are the hand-checked ones of test_sweep_analysis; at point 1
// EGA is worse than base on every seed.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/grid_analysis.h"
#include "fixture.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm::analysis;
using egm::testing::fixture_final;
using egm::testing::ScratchDir;
using nlohmann::json;

// ega at point 1: base + 0.04, 0.05, 0.07 (so delta(ega) = -0.04, -0.05, -0.07; mean -0.05333).
double point1_final(const std::string& variant, int64_t seed) {
  if (variant == "ega") return fixture_final("base", seed) + std::vector<double>{0.04, 0.05, 0.07}[seed];
  return fixture_final(variant, seed);
}

SweepData grid_data(bool with_grid = true) {
  SweepData d;
  d.sweep.id = 1;
  d.sweep.name = "g";
  d.spec.variants = {"base", "ega", "mope", "ega_mope"};
  d.spec.seeds = {0, 1, 2};
  d.spec.baseline = "base";
  d.spec.factors = Factors{"ega", "mope", "ega_mope", "base"};
  int64_t id = 0;
  for (int64_t point = 0; point < (with_grid ? 2 : 1); ++point)
    for (const auto& v : d.spec.variants)
      for (int64_t seed = 0; seed < 3; ++seed) {
        CellData c;
        c.row.id = ++id;
        c.row.sweep_id = 1;
        c.row.sweep_name = "g";
        c.row.position = id - 1;
        c.row.variant = v;
        c.row.seed = seed;
        c.row.key = v + "-s" + std::to_string(seed) + (with_grid ? "-g" + std::to_string(point) : "");
        c.row.status = egm::db::CellStatus::done;
        c.row.results.final_val = point == 0 ? fixture_final(v, seed) : point1_final(v, seed);
        if (with_grid) {
          c.row.grid_point = point;
          c.row.grid_json = json{{"train.lr", point == 0 ? 0.001 : 0.003}}.dump();
        }
        c.setups = {egm::analysis::RunSetup{1, "none", ""}};
        d.cells.push_back(c);
        d.val_curves[c.row.id] = {{0, 4.0}, {100, *c.row.results.final_val}};
      }
  return d;
}

AnalysisOptions options() {
  AnalysisOptions o;
  o.analyse_params = false;
  o.bootstrap_resamples = 200;
  return o;
}

const AcrossRow& row(const GridAnalysis& g, const std::string& quantity) {
  for (const auto& r : g.across)
    if (r.quantity == quantity) return r;
  throw std::runtime_error("no row " + quantity);
}

// Two axes: labels and the across table's columns follow the stored spec's
// axis order (its "grid_order" when the file did not write them sorted).
TEST(GridAnalysis, AxesFollowTheStoredSpecsOrder) {
  const json stored = {{"variants", {"base"}},
                       {"grid", {{"model.dropout", {0, 0.1}}, {"train.lr", {0.001, 0.003}}}},
                       {"grid_order", {"train.lr", "model.dropout"}}};
  auto axes = [](const json& spec) {
    std::vector<std::string> paths;
    for (const egm::spec::GridAxis& a : egm::spec::read_stored_spec(spec.dump()).grid) paths.push_back(a.path);
    return paths;
  };
  EXPECT_EQ(axes(stored), (std::vector<std::string>{"train.lr", "model.dropout"}));
  json sorted = stored;
  sorted.erase("grid_order");
  EXPECT_EQ(axes(sorted), (std::vector<std::string>{"model.dropout", "train.lr"}));

  SweepData d = grid_data();
  for (auto& c : d.cells) c.row.grid_json = json{{"train.lr", 0.001}, {"model.dropout", *c.row.grid_point * 0.1}}.dump();
  d.spec.grid = {egm::spec::GridAxis{"train.lr", {}, ""}, egm::spec::GridAxis{"model.dropout", {}, ""}};
  EXPECT_EQ(split_grid_points(d)[1].label, "train.lr=0.001 model.dropout=0.1");
  d.spec.grid = {};  // an older stored spec: the points' keys, sorted
  EXPECT_EQ(split_grid_points(d)[1].label, "model.dropout=0.1 train.lr=0.001");
}

TEST(GridAnalysis, SplitsByPointWithItsCellsAndCurves) {
  EXPECT_FALSE(has_grid(grid_data(false)));
  EXPECT_THROW(split_grid_points(grid_data(false)), egm::ConfigError);
  const auto points = split_grid_points(grid_data());
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].index, 1);
  EXPECT_EQ(points[1].label, "train.lr=0.003");
  EXPECT_EQ(points[0].data.cells.size(), 12u);
  EXPECT_EQ(points[0].data.val_curves.size(), 12u);
  for (const auto& c : points[1].data.cells) EXPECT_EQ(c.row.grid_point, std::optional<int64_t>(1));
}

TEST(GridAnalysis, EachPointIsAnalysedOnItsOwnCellsAndComparedAcross) {
  const GridAnalysis g = analyze_grid(grid_data(), options());
  ASSERT_EQ(g.points.size(), 2u);
  EXPECT_EQ(g.axes, std::vector<std::string>{"train.lr"});
  // Point 0 = the fixture: means 1.50, 1.42, 1.52, 1.38; delta(ega) = 0.08; I = 0.12 - 0.08 + 0.02 = 0.06.
  const SweepAnalysis& a0 = g.points[0].analysis;
  EXPECT_EQ(a0.cells_used, 12u);
  ASSERT_NE(a0.find_delta("ega"), nullptr);
  EXPECT_NEAR(a0.find_delta("ega")->delta.estimate, 0.08, 1e-12);
  ASSERT_TRUE(a0.interaction.has_value());
  EXPECT_NEAR(a0.interaction->result.estimate, 0.06, 1e-12);
  // Point 1: ega is worse on every seed: delta(ega) = mean(-0.04, -0.05, -0.07) = -0.05333.
  const SweepAnalysis& a1 = g.points[1].analysis;
  EXPECT_NEAR(a1.find_delta("ega")->delta.estimate, -0.16 / 3, 1e-12);

  const AcrossRow& mean_ega = row(g, "mean(ega)");
  ASSERT_EQ(mean_ega.points.size(), 2u);
  EXPECT_NEAR(mean_ega.points[0]->estimate, 1.42, 1e-12);
  EXPECT_NEAR(mean_ega.points[1]->estimate, 1.50 + 0.16 / 3, 1e-12);
  const AcrossRow& d_ega = row(g, "delta(ega)");
  EXPECT_NEAR(d_ega.points[0]->estimate, 0.08, 1e-12);
  EXPECT_EQ(d_ega.points[0]->ci_low, a0.find_delta("ega")->delta.ci_low);
  // Paired per-seed deltas 0.08, 0.09, 0.07 (SD 0.01): the interval [0.055, 0.105] lies above 0;
  // at point 1, -0.04, -0.05, -0.07 (SD 0.0153): [-0.0913, -0.0154], below 0.
  EXPECT_EQ(d_ega.points[0]->sign, IntervalSign::above);
  EXPECT_EQ(d_ega.points[1]->sign, IntervalSign::below);
  EXPECT_EQ(d_ega.holds, "differs between points");
  const AcrossRow& inter = row(g, "interaction");
  EXPECT_NEAR(inter.points[0]->estimate, 0.06, 1e-12);
  EXPECT_TRUE(inter.points[0]->has_interval);
  EXPECT_EQ(row(g, "delta(mope)").points[0]->estimate, row(g, "delta(mope)").points[1]->estimate);
  EXPECT_THROW(row(g, "delta(base)"), std::runtime_error);  // the baseline has no delta
}

TEST(GridAnalysis, APointNotMeasuredYetIsSaidSo) {
  SweepData d = grid_data();
  std::vector<CellData> kept;
  for (const auto& c : d.cells)
    if (!(c.row.grid_point == 1 && c.row.variant == "ega")) kept.push_back(c);
  d.cells = kept;
  const GridAnalysis g = analyze_grid(d, options());
  const AcrossRow& d_ega = row(g, "delta(ega)");
  ASSERT_EQ(d_ega.points.size(), 2u);
  EXPECT_FALSE(d_ega.points[1].has_value());
  EXPECT_EQ(d_ega.holds, "above 0 at the 1 of 2 points with an interval");
  EXPECT_FALSE(row(g, "interaction").points[1].has_value());
}

TEST(GridAnalysis, RenderersCarryEveryPointAndTheAcrossTable) {
  const GridAnalysis g = analyze_grid(grid_data(), options());
  const egm::db::Table t = grid_across_table(g);
  // 4 means + 3 deltas + 1 interaction, at 2 points.
  EXPECT_EQ(t.rows.size(), 16u);
  EXPECT_EQ(t.columns[2], "train.lr");
  const std::string md = render_grid(g, OutputFormat::markdown);
  EXPECT_NE(md.find("## Grid point 1: train.lr=0.003"), std::string::npos);
  EXPECT_NE(md.find("| delta(ega) | +0.0800 ["), std::string::npos) << md;
  EXPECT_NE(md.find("differs between points"), std::string::npos);
  const std::string text = render_grid(g, OutputFormat::table);
  EXPECT_NE(text.find("=== grid point 0: train.lr=0.001 ==="), std::string::npos);
  const json j = json::parse(render_grid(g, OutputFormat::json));
  EXPECT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][1]["values"]["train.lr"], 0.003);
  const std::string csv = render_grid(g, OutputFormat::csv);
  EXPECT_EQ(csv.rfind("grid_point,grid,variant,", 0), 0u) << csv.substr(0, 80);
  EXPECT_EQ(grid_paper_table(g).rows.size(), 10u);  // per point 4 variants + the interaction row
}

// What a grid sweep ends with: each point's main table, then the table
// across points; never the points' cells pooled into one 2x2.
TEST(GridAnalysis, HeadlineIsEachPointsMainTableThenTheAcrossTable) {
  const GridAnalysis g = analyze_grid(grid_data(), options());
  const std::string expected = "=== grid point 0: train.lr=0.001 ===\n\n" + render_main_table(g.points[0].analysis) +
                               "\n=== grid point 1: train.lr=0.003 ===\n\n" + render_main_table(g.points[1].analysis) +
                               "\n=== across grid points ===\n\n" +
                               egm::db::format_table(grid_across_table(g), egm::db::Format::table);
  EXPECT_EQ(render_headline(grid_data(), options()), expected);
  EXPECT_EQ(render_headline(grid_data(/*with_grid=*/false), options()),
            render_main_table(analyze_sweep(grid_data(false), options())));
}

TEST(GridAnalysis, ReportWritesAFolderPerPointAndTheComparison) {
  ScratchDir dir;
  ReportOptions o;
  o.out_dir = dir.file("report");
  o.analysis = options();
  o.gnuplot = "";  // no images: scripts and data only
  const GridReportResult r = write_grid_report(grid_data(), o);
  for (const char* f : {"index.md", "grid.md", "grid.csv", "grid_main.csv", "grid.json", "point-0/index.md",
                        "point-1/main.md", "point-1/plots/val_curves.gp"})
    EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/" + f)) << f;
  EXPECT_FALSE(r.plots_made);
  EXPECT_EQ(r.analysis.points.size(), 2u);
}

}  // namespace
