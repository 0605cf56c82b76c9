// The figure model (analysis/figures.h) and its gnuplot rendering: what is
// drawn is decided once, so the report and the web page show the same thing.
// The val curves' range is checked against curves shaped like a real run
// (4.2 at the first eval, 2.50-2.55 at the end), the grid-point label rule on
// hand-written points, and the gnuplot data against the figure's layers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "analysis/grid_analysis.h"

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

TEST(Figures, SequencesAreBandsWhereBoundedAndSayWhereTheySettled) {
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
  const auto f = sequence_figure({settled, open}, 0.95);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "sequences");
  ASSERT_EQ(f->layers.size(), 5u);  // band + line per claim, zero
  EXPECT_EQ(f->layers[0].kind, FigureLayer::Kind::band);
  EXPECT_TRUE(std::isnan(f->layers[0].lo[0])) << "an unbounded look has no band";
  EXPECT_DOUBLE_EQ(f->layers[0].lo[4], 0.02);
  EXPECT_DOUBLE_EQ(f->layers[0].hi[5], 0.18);
  EXPECT_EQ(f->layers[1].label, "delta(ega) (settled at 5 seeds)");
  EXPECT_EQ(f->layers[3].label, "interaction (not settled)");
  EXPECT_EQ(f->layers[4].kind, FigureLayer::Kind::hline);
  EXPECT_FALSE(sequence_figure({}, 0.95));
}

TEST(Figures, GridPointLabelsFollowTheSpecsAxesThenThePointsKeys) {
  const nlohmann::json values = {{"train.lr", 0.001}, {"model.dropout", 0}, {"extra", "x"}};
  EXPECT_EQ(grid_point_label(values, {"train.lr", "model.dropout"}), "train.lr=0.001 model.dropout=0 extra=x");
  EXPECT_EQ(grid_point_label(values, {"model.dropout"}), "model.dropout=0 extra=x train.lr=0.001");
  EXPECT_EQ(grid_point_label(nlohmann::json::object(), {"train.lr"}), "");
}

}  // namespace
