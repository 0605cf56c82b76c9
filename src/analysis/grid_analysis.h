// A sweep with a hyperparameter grid (experiments/README.md, "grid"): every
// analysis of sweep_analysis.h per grid point, and across points the
// quantities a reader compares ("does EGA's gain hold at every lr?"): each
// variant's mean, each delta against the baseline and the 2x2 interaction,
// with their intervals, point by point. Data first (GridAnalysis), rendered
// by render_grid / write_grid_report; a front end (HTML) can render the same.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/render.h"
#include "analysis/report.h"
#include "analysis/sweep_analysis.h"
#include "analysis/sweep_data.h"
#include "db/table_format.h"

namespace egm::analysis {

// One grid point's share of a sweep: its cells, curves and parameters.
struct GridPointData {
  int64_t index = 0;
  std::string label;     // "train.lr=0.001 model.dropout=0"
  nlohmann::json values;  // {"train.lr": 0.001, ...} (cells.grid_json)
  SweepData data;
};

// The one rule that names a grid point, for every rendering (egm analyze,
// report, serve's sweep and cell pages): "train.lr=0.001 model.dropout=0",
// the axes in `axes` order (the spec's), then any other key of the point in
// its JSON order; strings bare, numbers as the shortest round trip.
std::string grid_point_label(const nlohmann::json& values, const std::vector<std::string>& axes);

// True when the sweep's cells belong to grid points (a spec with "grid").
bool has_grid(const SweepData& data);
// The points in index order. ConfigError when the sweep has no grid.
std::vector<GridPointData> split_grid_points(const SweepData& data);

struct PointAnalysis {
  int64_t index = 0;
  std::string label;
  nlohmann::json values;
  SweepAnalysis analysis;
};

// Where an interval lies: "above 0", "below 0", "includes 0", or "no interval".
enum class IntervalSign { above, below, includes, none };
const char* interval_sign_text(IntervalSign sign);

// One quantity at one point: a variant's mean ("mean(ega)"), a delta against
// the baseline ("delta(ega)", positive = better than the baseline) or the
// interaction ("interaction", positive = superadditive).
struct AcrossCell {
  double estimate = 0.0;
  double ci_low = 0.0;
  double ci_high = 0.0;
  bool has_interval = false;
  std::size_t n = 0;
  IntervalSign sign = IntervalSign::none;  // of the interval against 0 (deltas and the interaction only)
};
struct AcrossRow {
  std::string quantity;
  std::vector<std::optional<AcrossCell>> points;  // one per point, none where not measured
  // Deltas and the interaction: the interval's side of 0 at every point with an
  // interval ("above 0 at every point", "differs between points", ...).
  std::string holds;
};

// One cell of the wide across-points table: "+0.0521 [+0.0312, +0.0730]"
// (means unsigned), "-" where the point has no value.
std::string across_cell_text(const AcrossRow& row, size_t point);

struct GridAnalysis {
  std::string sweep;
  std::string description;
  Metric metric = Metric::final_val;
  double level = 0.95;
  std::vector<std::string> axes;     // field paths, in the order of the point labels
  std::vector<PointAnalysis> points;  // index order
  std::vector<AcrossRow> across;      // means, then deltas, then the interaction
};

GridAnalysis analyze_grid(const SweepData& data, const AnalysisOptions& options = {});

// The across-points comparison, long: point, label, one column per axis,
// quantity, estimate, ci_low, ci_high, n, sign.
db::Table grid_across_table(const GridAnalysis& g);
// The paper table of every point, a point and label column first.
db::Table grid_paper_table(const GridAnalysis& g);
// The across-points comparison, wide, as Markdown: one row per quantity, one
// column per point ("+0.0521 [+0.0312, +0.0730]"), then "holds".
std::string render_grid_across_markdown(const GridAnalysis& g);
// Each point's analysis (text or Markdown as for one sweep) under its heading,
// then the across-points table; csv: grid_paper_table; json: everything.
std::string render_grid(const GridAnalysis& g, OutputFormat format);
// The plain-text form: each point's `point_text` under "=== grid point N: LABEL ===",
// then the across-points table (render_grid's table form: render_text per point).
std::string render_grid_text(const GridAnalysis& g, const std::function<std::string(const SweepAnalysis&)>& point_text);
nlohmann::json to_json(const GridAnalysis& g);

// `egm report` for a grid: one folder per point (point-N/, a full report
// each: tables and plots), and at the top grid.md (the across-points table and
// every point's main table), grid.csv (grid_across_table), grid_main.csv
// (grid_paper_table), grid.json and index.md.
struct GridReportResult {
  std::string out_dir;
  std::vector<std::string> files;  // relative to out_dir
  bool plots_made = false;         // every point's plots were made
  std::string plot_message;
  GridAnalysis analysis;
};
GridReportResult write_grid_report(const SweepData& data, const ReportOptions& options);

}  // namespace egm::analysis
