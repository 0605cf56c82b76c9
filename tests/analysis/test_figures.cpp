// The figure model (analysis/figures.h) and its gnuplot rendering: what is
// drawn is decided once, so the report and the web page show the same thing.
// The val curves' range is checked against curves shaped like a real run
// (4.2 at the first eval, 2.50-2.55 at the end), the grid-point label rule on
// hand-written points, and the gnuplot data against the figure's layers.
// The sequences figure's ranges, ticks and unbounded looks, and every
// figure's legend, are checked on the model, then each figure is drawn by
// the real gnuplot (when installed): it must draw without a word of warning.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "analysis/grid_analysis.h"
#include "analysis/sweep_analysis.h"
#include "fixture.h"
#include "test_helpers.h"
#include "util/files.h"

namespace {

using namespace egm::analysis;

// Two variants whose losses fall from 4.2 to about 2.5; they differ by 0.05 at the end.
std::vector<VariantCurve> realistic_curves() {
  std::vector<VariantCurve> curves;
  for (const auto& [name, end] : {std::pair<std::string, double>{"base", 2.55}, {"ega", 2.50}}) {
    std::vector<CurvePointStats> points;
    for (int64_t step = 0; step <= 1000; step += 100) {
      const double loss = end + (4.2 - end) * std::exp(-static_cast<double>(step) / 150.0);
      points.push_back({step, 3, loss, 0.01, loss - 0.01, loss + 0.01});
    }
    curves.emplace_back(name, points);
  }
  return curves;
}

TEST(Figures, ValCurveRangeShowsTheEndOfTraining) {
  const auto curves = realistic_curves();
  const auto range = val_curve_y_range(curves);
  ASSERT_TRUE(range);
  // Every value of the second half is inside, the first eval (4.2) is not.
  EXPECT_LT(range->first, 2.49);
  EXPECT_GT(range->second, 2.56 + 0.01);
  EXPECT_LT(range->second, 4.0);
  // The end gap of 0.05 between the variants is at least a tenth of the height
  // (with the range fitted to 2.49..4.21 it was under 3%).
  EXPECT_GT(0.05 / (range->second - range->first), 0.1);
  const Figure f = val_curve_figure(curves, "s");
  EXPECT_EQ(f.y_range, range);
  ASSERT_EQ(f.layers.size(), 4u);  // a band and a mean line per variant
  EXPECT_EQ(f.layers[0].kind, FigureLayer::Kind::band);
  EXPECT_EQ(f.layers[1].label, "base (3 seeds)");
  EXPECT_EQ(f.title, "sweep s: val loss (eval_val) per variant: mean over seeds, min..max band");
}

TEST(Figures, ValCurvesOfOneStepAreFittedToTheData) {
  std::vector<VariantCurve> curves{{"base", {{100, 1, 2.5, 0, 2.5, 2.5}}}};
  EXPECT_FALSE(val_curve_y_range(curves));
  EXPECT_FALSE(val_curve_figure(curves).y_range);
  EXPECT_FALSE(val_curve_y_range({}));
}

TEST(Figures, GnuplotDataHasOneBlockPerDataLayer) {
  Figure f;
  f.name = "demo";
  f.title = "demo 'quoted'";
  f.band({1, 2}, {0.5, 0.6}, {1.5, 1.6}, "#111111");
  f.line({1, 2}, {1.0, NAN}, "#222222", "mean");
  f.interval(0, 1.0, 0.5, 1.5, "#333333", 0.25);
  f.span(0.5, 1.5, "#777777");
  f.hline(0, "#444444", "zero");
  f.vline(6, "#555555", "");
  f.line({}, {}, "#666666", "legend only");
  f.y_range = std::make_pair(0.0, 2.0);
  const GnuplotFigure g = gnuplot_figure(f);
  // Three data blocks: band, line (the NaN written as '?'), interval (at x + dx).
  EXPECT_NE(g.data.find("# index 0: (unlabelled) (x low high)\n1 0.5 1.5\n2 0.6 1.6\n"), std::string::npos) << g.data;
  EXPECT_NE(g.data.find("\n\n\n# index 1: mean (x y)\n1 1\n2 ?\n"), std::string::npos) << g.data;
  EXPECT_NE(g.data.find("# index 2: (unlabelled) (x y low high)\n0.25 1 0.5 1.5\n"), std::string::npos) << g.data;
  EXPECT_EQ(g.data.find("# index 3"), std::string::npos);
  EXPECT_NE(g.script.find("set title 'demo ''quoted'''"), std::string::npos);
  EXPECT_NE(g.script.find("set yrange [0:2]"), std::string::npos);
  EXPECT_NE(g.script.find("'demo.dat' index 1 using 1:2 with lines"), std::string::npos);
  EXPECT_NE(g.script.find("0 with lines lw 1.2 dt 2 lc rgb '#444444' title 'zero'"), std::string::npos);
  EXPECT_NE(g.script.find("set arrow from 6, graph 0 to 6, graph 1 nohead dt 2"), std::string::npos);
  EXPECT_NE(g.script.find("set object 1 rect from 0.5, graph 0 to 1.5, graph 1 behind"), std::string::npos);
  EXPECT_NE(g.script.find("unset object\n"), std::string::npos) << "the SVG pass starts clean";
  EXPECT_NE(g.script.find("1/0 with lines lw 2 lc rgb '#666666' title 'legend only'"), std::string::npos);
  EXPECT_NE(g.script.find("set output 'demo.png'"), std::string::npos);
  EXPECT_NE(g.script.find("set output 'demo.svg'"), std::string::npos);
}

TEST(Figures, OmegaSigmaPlaneSpansTheRegionsItsPairsReach) {
  MopeRun run;
  run.variant = "mope";
  run.key = "mope-s1";
  MopePair p;
  p.sigma = 200;
  p.omega = 0.02;
  p.sigma0 = 3;
  p.omega0 = 1;
  p.has_init = true;
  run.pairs.push_back(p);
  const auto f = omega_sigma_figure({run});
  ASSERT_TRUE(f);
  ASSERT_TRUE(f->x_range);
  EXPECT_DOUBLE_EQ(f->x_range->first, 0.5);
  EXPECT_DOUBLE_EQ(f->x_range->second, 300);  // 1.5 x the widest sigma
  EXPECT_EQ(f->top_labels.size(), 5u);
  EXPECT_TRUE(f->log_x && f->log_y);
  EXPECT_FALSE(omega_sigma_figure({}));
}

// Two claims over six seeds: one bounded from n = 5 and settled there, one
// unbounded at every look.
std::vector<ClaimSequence> two_claims() {
  ClaimSequence settled;
  settled.claim = "delta(ega)";
  for (size_t n = 1; n <= 6; ++n) {
    egm::stats::SequenceLook look;
    look.n = n;
    look.estimate = 0.1;
    const bool bounded = n >= 5;
    look.lower = bounded ? 0.02 : -INFINITY;
    look.upper = bounded ? 0.18 : INFINITY;
    settled.looks.push_back(look);
  }
  settled.settled_at = 5;
  ClaimSequence open = settled;
  open.claim = "interaction";
  open.settled_at.reset();
  for (auto& look : open.looks) look.lower = -INFINITY, look.upper = INFINITY, look.estimate = 0.03;
  return {settled, open};
}

TEST(Figures, SequencesShadeTheirUnboundedLooksToTheFrameAndSaySo) {
  const auto f = sequence_figure(two_claims(), 0.95);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "sequences");
  using K = FigureLayer::Kind;
  // First, behind everything, one grey span per stretch of unbounded looks;
  // per claim its band (bounded looks only) and estimate; the legend's span entry; zero.
  ASSERT_EQ(f->layers.size(), 7u);
  EXPECT_EQ(f->layers[0].kind, K::span);
  EXPECT_EQ(f->layers[0].xs, (std::vector<double>{0.5, 5}))  // from the frame to the first bounded look
      << "looks 1-4 hold the whole line until look 5";
  EXPECT_EQ(f->layers[1].kind, K::span);
  EXPECT_EQ(f->layers[1].xs, (std::vector<double>{0.5, 6.5})) << "never bounded: shaded across the frame";
  EXPECT_EQ(f->layers[2].kind, K::band);
  EXPECT_EQ(f->layers[2].xs, (std::vector<double>{5, 6}));
  EXPECT_DOUBLE_EQ(f->layers[2].lo[0], 0.02);
  EXPECT_DOUBLE_EQ(f->layers[2].hi[1], 0.18);
  EXPECT_EQ(f->layers[3].label, "delta(ega) (unbounded until n = 5; settled at n = 5)");
  EXPECT_EQ(f->layers[4].kind, K::line) << "no band for a claim with no bounded look";
  EXPECT_EQ(f->layers[4].label, "interaction (unbounded at every n, 1..6; not settled)");
  EXPECT_EQ(f->layers[5].kind, K::span);
  EXPECT_TRUE(f->layers[5].xs.empty()) << "a legend entry for the shading";
  EXPECT_EQ(f->layers[0].colour, f->layers[5].colour);
  EXPECT_EQ(f->layers[6].kind, K::hline);
  // Claims unbounded over the same looks share one span.
  std::vector<ClaimSequence> same = two_claims();
  same[1] = same[0];
  same[1].claim = "delta(mope)";
  const auto g = sequence_figure(same, 0.95);
  EXPECT_EQ(std::count_if(g->layers.begin(), g->layers.end(),
                          [](const FigureLayer& l) { return l.kind == K::span && !l.xs.empty(); }),
            1);
  // Seeds are counted: whole-number ticks, half a look of margin either side.
  EXPECT_TRUE(f->integer_x);
  EXPECT_EQ(f->x_range, std::make_pair(0.5, 6.5));
  // Zero inside the frame, a visible distance from its edge, as is every finite number.
  ASSERT_TRUE(f->y_range);
  const auto [lo, hi] = *f->y_range;
  EXPECT_GT((0 - lo) / (hi - lo), 0.05);
  EXPECT_GT(hi, 0.18);
  // Every claim, the shading and zero in the legend.
  std::vector<std::string> legend;
  for (const FigureLayer* l : legend_entries(*f)) legend.push_back(l->label);
  EXPECT_EQ(legend, (std::vector<std::string>{"delta(ega) (unbounded until n = 5; settled at n = 5)",
                                              "interaction (unbounded at every n, 1..6; not settled)",
                                              "shaded to the frame: no finite bound yet", "zero"}));
  EXPECT_FALSE(sequence_figure({}, 0.95));
}

TEST(Figures, SequencesAllBelowZeroStillShowZeroInside) {
  ClaimSequence c;
  c.claim = "delta(mope)";
  c.looks = egm::stats::t_mixture_sequence({-0.03, -0.031, -0.029, -0.03, -0.032, -0.028, -0.03, -0.031});
  const auto f = sequence_figure({c}, 0.95);
  ASSERT_TRUE(f && f->y_range);
  const auto [lo, hi] = *f->y_range;
  EXPECT_GT((hi - 0) / (hi - lo), 0.05) << "zero is the top of the data here; it must not be the frame";
  for (const auto& look : c.looks)
    if (look.bounded()) EXPECT_GE(look.lower, lo);
}

// The interaction figure of the analysis fixture: every mark it draws has a legend entry.
TEST(Figures, InteractionLegendNamesEveryMark) {
  egm::testing::ScratchDir dir;
  egm::db::ResultsDb db(dir.file("f.sqlite"), egm::db::OpenMode::read_write_create);
  egm::testing::write_fixture(db);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  const auto f = interaction_figure(a);
  ASSERT_TRUE(f);
  std::set<std::string> legend_colours, mark_colours;
  std::vector<std::string> labels;
  for (const FigureLayer* l : legend_entries(*f)) legend_colours.insert(l->colour), labels.push_back(l->label);
  for (const auto& l : f->layers) mark_colours.insert(l.colour);
  EXPECT_EQ(mark_colours, legend_colours);
  EXPECT_EQ(labels, (std::vector<std::string>{"deltas: mean over seeds, 95% t interval",
                                              "interaction I: mean over seeds, 95% t interval",
                                              "I: 95% bootstrap interval", "published (paper)", "zero"}));
}

// Draws each figure with the real gnuplot into figures_png/ (in the test's
// working folder, kept for a person to look at): no warning, a PNG and an SVG.
TEST(Figures, GnuplotDrawsEveryFigureWithoutAWarning) {
  const std::optional<std::string> gnuplot = find_program("gnuplot");
  if (!gnuplot) GTEST_SKIP() << "no gnuplot on PATH";
  egm::testing::ScratchDir dir;
  egm::db::ResultsDb db(dir.file("f.sqlite"), egm::db::OpenMode::read_write_create);
  egm::testing::write_fixture(db);
  const SweepData data = load_sweep(db, "fixture");
  const SweepAnalysis a = analyze_sweep(data);
  std::vector<Figure> figures = sweep_figures(data, a);
  ClaimSequence real;  // a sequence that becomes bounded, from the t-mixture itself
  real.claim = "delta(ega_causal_mope)";
  real.looks = egm::stats::t_mixture_sequence({0.02, 0.05, 0.03, 0.04, 0.035, 0.045, 0.03, 0.04, 0.038, 0.041});
  std::vector<ClaimSequence> claims = two_claims();
  claims.push_back(real);
  figures.push_back(*sequence_figure(claims, 0.95));
  ASSERT_EQ(figures.size(), 4u);
  const std::string out = std::filesystem::absolute("figures_png").string();
  std::filesystem::create_directories(out);
  for (const Figure& f : figures) {
    const GnuplotFigure g = gnuplot_figure(f);
    std::ofstream(out + "/" + f.name + ".gp") << g.script;
    std::ofstream(out + "/" + f.name + ".dat") << g.data;
    const GnuplotRun run = run_gnuplot(*gnuplot, f.name + ".gp", out);
    EXPECT_TRUE(run.ok) << f.name << ": " << run.output;
    EXPECT_EQ(run.output, "") << f.name << ": gnuplot said something (a warning)";
    const std::string png = egm::read_file(out + "/" + f.name + ".png");
    EXPECT_EQ(png.compare(0, 4, "\x89PNG"), 0) << f.name;
    EXPECT_GT(png.size(), 10000u) << f.name;
    EXPECT_NE(egm::read_file(out + "/" + f.name + ".svg").find("<svg"), std::string::npos) << f.name;
    if (f.name == "sequences") {
      // Whole-number seed ticks, an explicit range with zero inside, the shading behind the data.
      EXPECT_NE(g.script.find("set xtics 1\n"), std::string::npos) << g.script;
      EXPECT_NE(g.script.find("set xrange [0.5:10.5]\n"), std::string::npos) << g.script;
      EXPECT_NE(g.script.find("set yrange ["), std::string::npos);
      EXPECT_NE(g.script.find("rect from 0.5, graph 0 to 5, graph 1 behind"), std::string::npos) << g.script;
      EXPECT_NE(g.script.find("keyentry with boxes"), std::string::npos);
      EXPECT_NE(g.script.find("title 'interaction (unbounded at every n, 1..6; not settled)'"), std::string::npos);
    }
    if (f.name == "interaction") {
      EXPECT_NE(g.script.find("title 'interaction I: mean over seeds, 95% t interval'"), std::string::npos);
      // The four deltas share one legend entry.
      size_t titled = 0;
      for (size_t p = 0; (p = g.script.find("title 'deltas:", p)) != std::string::npos; ++p) ++titled;
      EXPECT_EQ(titled, 2u) << "once per drawing (PNG, SVG)";
    }
  }
}

TEST(Figures, GridPointLabelsFollowTheSpecsAxesThenThePointsKeys) {
  const nlohmann::json values = {{"train.lr", 0.001}, {"model.dropout", 0}, {"extra", "x"}};
  EXPECT_EQ(grid_point_label(values, {"train.lr", "model.dropout"}), "train.lr=0.001 model.dropout=0 extra=x");
  EXPECT_EQ(grid_point_label(values, {"model.dropout"}), "model.dropout=0 extra=x train.lr=0.001");
  EXPECT_EQ(grid_point_label(nlohmann::json::object(), {"train.lr"}), "");
}

}  // namespace
