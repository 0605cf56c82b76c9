// The figures of a sweep as data, built once and drawn twice: `egm report`
// writes each as a gnuplot script with its data (gnuplot_figure.h), `egm
// serve` as inline SVG (src/serve/svg.h). A figure is a title, axis labels,
// axis scales and ranges, and an ordered list of layers (shaded bands, lines,
// points, vertical intervals, reference lines, full-height spans, region
// labels); the builders below decide what is drawn, the renderers only how.
// So the report's PNG and the page's SVG show the same curves, bands,
// intervals, reference lines and ranges, with the same titles and legends.
//
// The legend is every labelled layer but bands (`legend_entries`), each label
// once: a figure labels every layer that a reader must tell apart (an
// interval is labelled as much as a line), so nothing drawn goes unexplained.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/param_analysis.h"
#include "analysis/report.h"
#include "analysis/sequences.h"
#include "analysis/sweep_analysis.h"

namespace egm::analysis {

// A colour of the figures' palette by index (cycles): "#1f77b4", ...
std::string figure_colour(size_t index);

struct FigureLayer {
  enum class Kind { band, line, points, interval, hline, vline, span };
  Kind kind = Kind::line;
  // band: xs, lo, hi; line/points: xs, ys; interval: one x, y, lo, hi; span:
  // xs = {from, to}, shaded over the frame's whole height (what has no finite
  // bound). A line, points or span without xs is a legend entry only.
  std::vector<double> xs, ys, lo, hi;
  std::string colour;                  // "#rrggbb"
  std::string label;                   // legend entry; empty: none
  bool dashed = false;
  bool hollow = false;                 // points: outline only
  std::string shape = "circle";        // points: circle | diamond
  double dx = 0;                       // interval: drawn at x + dx (two intervals side by side)
};

struct Figure {
  std::string name;     // stable id: report file stem (plots/NAME.gp) and page element id (plot-NAME)
  std::string title;
  std::string x_label, y_label;
  std::string caption;  // one sentence under the figure (report index, page)
  bool log_x = false, log_y = false;
  bool integer_x = false;  // x ticks at whole numbers only (a count: seeds looked at)
  std::vector<std::string> categories;  // category labels at x = 0, 1, ... instead of numeric ticks
  // Fixed ranges; without one the renderer fits the data (with a margin).
  std::optional<std::pair<double, double>> x_range, y_range;
  // Text labels along the top of the frame at these x values (the sigma regions).
  std::vector<std::pair<double, std::string>> top_labels;
  std::vector<FigureLayer> layers;

  Figure& band(std::vector<double> xs, std::vector<double> lo, std::vector<double> hi, std::string colour);
  Figure& line(std::vector<double> xs, std::vector<double> ys, std::string colour, std::string label,
               bool dashed = false);
  Figure& points(std::vector<double> xs, std::vector<double> ys, std::string colour, std::string label,
                 bool hollow = false, std::string shape = "circle");
  Figure& interval(double x, double y, double lo, double hi, std::string colour, double dx = 0,
                   std::string label = "");
  Figure& hline(double y, std::string colour, std::string label, bool dashed = true);
  Figure& vline(double x, std::string colour, std::string label, bool dashed = true);
  // from > to or NaN: a legend entry only.
  Figure& span(double from, double to, std::string colour, std::string label = "");
  bool empty() const;  // no finite data point in any data layer
};

// The layers the legend lists, in layer order: every labelled layer but
// bands, a label that an earlier entry already has left out.
std::vector<const FigureLayer*> legend_entries(const Figure& figure);

// Val loss per variant: mean over seeds with the min..max band. The y range
// is chosen for the end of training, where the variants differ: from the
// lowest value to the highest value of the second half of the steps, with as
// much again above, so the early losses (4.2 at the first eval against
// 2.50-2.55 at the end) do not squeeze the end into a few pixels; the start
// of the curves runs off the top of the frame. Fitted to all values when the
// curves have fewer than two steps.
Figure val_curve_figure(const std::vector<VariantCurve>& curves, const std::string& sweep = "");
// The y range val_curve_figure uses, or nullopt (fit the data).
std::optional<std::pair<double, double>> val_curve_y_range(const std::vector<VariantCurve>& curves);

// The MoPE (sigma, omega) plane, log-log: learned pairs per variant against
// the initial pairs, the omega*sigma = 5 boundary, the clamp omega = 0.95 pi,
// and the sigma regions (dashed lines at 1, 6, 20, 55 with their names).
// nullopt without MoPE runs. `name` lets a cell page draw its own plane.
std::optional<Figure> omega_sigma_figure(const std::vector<MopeRun>& runs, const std::string& sweep = "",
                                         const std::string& name = "omega_sigma");

// The deltas of the 2x2, their sum and the interaction I with their t
// intervals (I's bootstrap interval beside it), published values as
// diamonds, and zero. nullopt without an interaction.
std::optional<Figure> interaction_figure(const SweepAnalysis& analysis);

// Each claim's anytime-valid confidence sequence narrowing over the seeds
// (sequences.h): per claim its bounds as a band over the bounded looks, the
// looks before them (the whole line) as a span to the frame in the claim's
// colour, and its running estimate as a line, over the number of seeds
// looked at (whole-number ticks), with zero. The legend says per claim until
// which n it was unbounded and where it settled. The y range holds every
// finite bound, every estimate and zero, padded, so zero never sits on the
// frame. A claim is settled where its band leaves zero. nullopt without
// claims.
std::optional<Figure> sequence_figure(const std::vector<ClaimSequence>& sequences, double level);

// The sweep's figures in page order: val curves, then the plane, the
// interaction and the claims' sequences when there are some. The val-curve
// figure is left out while there are no curves, unless `empty_curves` (egm
// serve's page of a running sweep shows where they will be).
std::vector<Figure> sweep_figures(const SweepData& data, const SweepAnalysis& analysis,
                                  const std::vector<ClaimSequence>& sequences = {}, bool empty_curves = false);

}  // namespace egm::analysis
