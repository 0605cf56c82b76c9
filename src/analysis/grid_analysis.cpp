// A grid sweep analysed point by point, each point's label from its axis
// values, and the across-points table: does each claim keep its sign at every point?
#include "analysis/grid_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/analysis_json.h"
#include "analysis/table_cells.h"
#include "analysis/tables.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json_limits.h"

namespace egm::analysis {
namespace {

using nlohmann::json;

std::string value_text(const json& v) {
  // A string without its JSON quotes; integers and booleans as JSON writes them.
  if (v.is_string()) return v.get<std::string>();
  // fmt's shortest round-trip form: 0.001, not 0.0010000000000000000208.
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}


// Axis order: the stored spec's (as written; spec::read_stored_spec), then any
// other key the points carry.
std::vector<std::string> axes_of(const std::vector<GridPointData>& points, const spec::ExperimentSpec& spec) {
  std::set<std::string> seen;
  std::vector<std::string> axes;
  for (const spec::GridAxis& a : spec.grid)
    // A path the spec names twice is listed once.
    if (seen.insert(a.path).second) axes.push_back(a.path);
  for (const auto& p : points)
    for (const auto& [k, v] : p.values.items())
      if (seen.insert(k).second) axes.push_back(k);
  return axes;
}

IntervalSign sign_of(bool has_interval, double lo, double hi) {
  // A NaN bound (one seed) is no interval, whatever the flag says.
  if (!has_interval || !std::isfinite(lo) || !std::isfinite(hi)) return IntervalSign::none;
  if (lo > 0) return IntervalSign::above;
  if (hi < 0) return IntervalSign::below;
  return IntervalSign::includes;
}

std::string holds_text(const AcrossRow& row) {
  std::set<IntervalSign> signs;
  size_t with = 0;
  for (const auto& c : row.points) {
    // A point without the quantity, or without an interval, does not vote.
    if (!c || c->sign == IntervalSign::none) continue;
    ++with;
    signs.insert(c->sign);
  }
  if (with == 0) return "no interval";
  // Points not measured yet, or with one seed, have no interval: say how many had one.
  const std::string where = with == row.points.size()
                                ? "at every point"
                                : fmt::format("at the {} of {} points with an interval", with, row.points.size());
  // Every point with an interval agrees on the side of 0.
  if (signs.size() == 1) return fmt::format("{} {}", interval_sign_text(*signs.begin()), where);
  return "differs between points";
}

std::string signed_num(double x) { return std::isfinite(x) ? fmt::format("{:+.4f}", x) : "-"; }

std::string cell_text(const std::optional<AcrossCell>& c, bool is_mean) {
  if (!c) return "-";
  const auto f = [&](double x) { return is_mean ? fmt::format("{:.4f}", x) : signed_num(x); };
  if (!c->has_interval) return fmt::format("{} (n={}, no interval)", f(c->estimate), c->n);
  return fmt::format("{} [{}, {}]", f(c->estimate), f(c->ci_low), f(c->ci_high));
}

using cells::num;

}  // namespace

std::string grid_point_label(const json& values, const std::vector<std::string>& axes) {
  std::string s;
  auto add = [&](const std::string& axis) {
    if (!s.empty()) s += ' ';
    // Only called for keys present: a const json's operator[] on a missing key is undefined.
    s += axis + "=" + value_text(values[axis]);
  };
  for (const auto& axis : axes)
    if (values.contains(axis)) add(axis);
  // Keys the axes do not list come after, in the object's own (sorted) key order.
  if (values.is_object())
    for (const auto& [k, v] : values.items())
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) add(k);
  return s;
}

std::string across_cell_text(const AcrossRow& row, size_t point) {
  // Means print unsigned; deltas and the interaction with their sign.
  return cell_text(row.points.at(point), row.quantity.rfind("mean(", 0) == 0);
}

const char* interval_sign_text(IntervalSign sign) {
  switch (sign) {
    case IntervalSign::above: return "above 0";
    case IntervalSign::below: return "below 0";
    case IntervalSign::includes: return "includes 0";
    case IntervalSign::none: return "no interval";
  }
  return "";
}

bool has_grid(const SweepData& data) {
  for (const auto& c : data.cells)
    if (c.row.grid_point) return true;
  return false;
}

std::vector<GridPointData> split_grid_points(const SweepData& data) {
  EGM_REQUIRE(has_grid(data), ConfigError, "sweep '{}' has no grid", data.sweep.name);
  std::map<int64_t, GridPointData> points;
  for (const auto& c : data.cells) {
    // A sweep is a grid or not: a cell without a point beside cells with one means a mixed or damaged database.
    EGM_REQUIRE(c.row.grid_point.has_value(), ConfigError, "sweep '{}': cell {} has no grid point, its others do",
                data.sweep.name, c.row.key);
    GridPointData& p = points[*c.row.grid_point];
    // The first cell of a point sets its values and the fields every point shares.
    if (p.data.cells.empty()) {
      p.index = *c.row.grid_point;
      // grid_json is stored text, perhaps from a database made elsewhere: parsed under the user-input limits.
      p.values = c.row.grid_json ? parse_json(*c.row.grid_json, JsonLimits::user(), "grid_json") : json::object();
      p.data.sweep = data.sweep;
      p.data.spec = data.spec;
    }
    p.data.cells.push_back(c);
    // Curves and parameters follow their cells, so each point's analysis sees only its own.
    if (auto it = data.val_curves.find(c.row.id); it != data.val_curves.end()) p.data.val_curves[c.row.id] = it->second;
    if (auto it = data.params.find(c.row.id); it != data.params.end()) p.data.params[c.row.id] = it->second;
  }
  std::vector<GridPointData> out;
  // In point-index order (the map's).
  for (auto& [index, p] : points) out.push_back(std::move(p));
  const std::vector<std::string> axes = axes_of(out, data.spec);
  for (auto& p : out) p.label = grid_point_label(p.values, axes);
  return out;
}

GridAnalysis analyze_grid(const SweepData& data, const AnalysisOptions& options) {
  const std::vector<GridPointData> points = split_grid_points(data);
  GridAnalysis g;
  g.sweep = data.sweep.name;
  g.description = data.spec.description;
  g.metric = options.metric;
  g.level = options.level;
  g.axes = axes_of(points, data.spec);
  for (const auto& p : points) {
    PointAnalysis pa;
    pa.index = p.index;
    pa.label = p.label;
    pa.values = p.values;
    try {
      pa.analysis = analyze_sweep(p.data, options);
    } catch (const ConfigError& e) {
      // The point's index and label lead the message: which point refused.
      EGM_THROW(ConfigError, "grid point {} ({}): {}", p.index, p.label, e.what());
    }
    g.points.push_back(std::move(pa));
  }
  const size_t n = g.points.size();
  // Means of every variant, in spec order.
  for (const auto& variant : data.spec.variants) {
    AcrossRow row;
    row.quantity = fmt::format("mean({})", variant);
    for (const auto& p : g.points) {
      const VariantSummary* v = p.analysis.find_variant(variant);
      // An empty cell: the variant has no value at this point.
      if (!v || v->at(g.metric).summary.n == 0) {
        row.points.emplace_back();
        continue;
      }
      const stats::Summary& s = v->at(g.metric).summary;
      // A mean is not tested against 0: no sign.
      row.points.push_back(AcrossCell{s.mean, s.ci_low, s.ci_high, s.has_interval, s.n, IntervalSign::none});
    }
    g.across.push_back(std::move(row));
  }
  // Deltas against the baseline.
  for (const auto& variant : data.spec.variants) {
    AcrossRow row;
    row.quantity = fmt::format("delta({})", variant);
    bool any = false;
    for (const auto& p : g.points) {
      const DeltaResult* d = p.analysis.find_delta(variant);
      if (!d) {
        row.points.emplace_back();
        continue;
      }
      any = true;
      const Estimate& e = d->delta;
      row.points.push_back(
          AcrossCell{e.estimate, e.ci_low, e.ci_high, e.has_interval, e.n, sign_of(e.has_interval, e.ci_low, e.ci_high)});
    }
    // The baseline (no delta against itself) gets no row at all.
    if (!any) continue;
    g.across.push_back(std::move(row));
  }
  // The interaction.
  AcrossRow inter;
  inter.quantity = "interaction";
  bool any = false;
  for (const auto& p : g.points) {
    if (!p.analysis.interaction) {
      inter.points.emplace_back();
      continue;
    }
    any = true;
    const stats::InteractionResult& r = p.analysis.interaction->result;
    const bool has = r.interval.has_interval;
    inter.points.push_back(AcrossCell{r.estimate, r.interval.ci_low, r.interval.ci_high, has, r.n,
                                      sign_of(has, r.interval.ci_low, r.interval.ci_high)});
  }
  if (any) g.across.push_back(std::move(inter));
  for (auto& row : g.across) {
    row.points.resize(n);
    // Whether a mean "holds" means nothing: only the signed quantities get a summary.
    if (row.quantity.rfind("mean(", 0) != 0) row.holds = holds_text(row);
  }
  return g;
}

db::Table grid_across_table(const GridAnalysis& g) {
  db::Table t;
  t.columns = {"grid_point", "grid"};
  for (const auto& axis : g.axes) t.columns.push_back(axis);
  for (const char* c : {"quantity", "estimate", "ci_low", "ci_high", "n", "sign"}) t.columns.push_back(c);
  for (const auto& row : g.across)
    for (size_t i = 0; i < g.points.size(); ++i) {
      const PointAnalysis& p = g.points[i];
      const std::optional<AcrossCell>& c = row.points[i];
      // Long form: one row per point and quantity; a point without the quantity has no row.
      if (!c) continue;
      std::vector<db::Value> r{db::Value(p.index), db::Value(p.label)};
      for (const auto& axis : g.axes) {
        // A missing axis is NULL; numeric values stay numbers in the CSV, anything else is text.
        if (!p.values.contains(axis))
          r.emplace_back();
        else if (p.values[axis].is_number())
          r.emplace_back(p.values[axis].get<double>());
        else
          r.emplace_back(value_text(p.values[axis]));
      }
      r.emplace_back(row.quantity);
      r.push_back(num(c->estimate));
      r.push_back(c->has_interval ? num(c->ci_low) : db::Value());
      r.push_back(c->has_interval ? num(c->ci_high) : db::Value());
      r.emplace_back(static_cast<int64_t>(c->n));
      r.emplace_back(row.quantity.rfind("mean(", 0) == 0 ? std::string() : std::string(interval_sign_text(c->sign)));
      t.rows.push_back(std::move(r));
    }
  return t;
}

db::Table grid_paper_table(const GridAnalysis& g) {
  db::Table t;
  for (const auto& p : g.points) {
    const db::Table one = paper_table(p.analysis);
    // Every point's paper table has the same columns; the first point's define them.
    if (t.columns.empty()) {
      t.columns = {"grid_point", "grid"};
      t.columns.insert(t.columns.end(), one.columns.begin(), one.columns.end());
    }
    for (const auto& row : one.rows) {
      std::vector<db::Value> r{db::Value(p.index), db::Value(p.label)};
      r.insert(r.end(), row.begin(), row.end());
      t.rows.push_back(std::move(r));
    }
  }
  return t;
}

std::string render_grid_across_markdown(const GridAnalysis& g) {
  std::string s = fmt::format("{} by grid point ({}, {:.0f}% intervals; delta = baseline - variant, positive = "
                              "better; interaction > 0 = superadditive):\n\n",
                              metric_name(g.metric), metric_description(g.metric), 100 * g.level);
  s += "| quantity |";
  // A point without a label (no grid values) is named by its index.
  for (const auto& p : g.points) s += fmt::format(" {} |", p.label.empty() ? fmt::format("point {}", p.index) : p.label);
  s += " holds |\n|---|";
  for (size_t i = 0; i < g.points.size(); ++i) s += "---|";
  s += "---|\n";
  for (const auto& row : g.across) {
    s += fmt::format("| {} |", row.quantity);
    for (size_t i = 0; i < row.points.size(); ++i) s += fmt::format(" {} |", across_cell_text(row, i));
    s += fmt::format(" {} |\n", row.holds);
  }
  return s;
}

nlohmann::json to_json(const GridAnalysis& g) {
  json j = analysis_header_json(g);
  j["axes"] = g.axes;
  j["points"] = json::array();
  for (const auto& p : g.points)
    // Each point's whole analysis nested under it, as egm analyze --format json writes one.
    j["points"].push_back({{"index", p.index}, {"label", p.label}, {"values", p.values}, {"analysis", to_json(p.analysis)}});
  j["across"] = json::array();
  for (const auto& row : g.across) {
    json r{{"quantity", row.quantity}, {"holds", row.holds}, {"points", json::array()}};
    for (const auto& c : row.points) {
      if (!c) {
        r["points"].push_back(nullptr);
        continue;
      }
      json x{{"estimate", c->estimate}, {"n", c->n}, {"has_interval", c->has_interval}};
      // JSON has no NaN: a missing bound is null.
      x["ci_low"] = c->has_interval && std::isfinite(c->ci_low) ? json(c->ci_low) : json(nullptr);
      x["ci_high"] = c->has_interval && std::isfinite(c->ci_high) ? json(c->ci_high) : json(nullptr);
      if (row.quantity.rfind("mean(", 0) != 0) x["sign"] = interval_sign_text(c->sign);
      r["points"].push_back(std::move(x));
    }
    j["across"].push_back(std::move(r));
  }
  return j;
}

std::string render_grid_text(const GridAnalysis& g,
                             const std::function<std::string(const SweepAnalysis&)>& point_text) {
  std::string s;
  for (const auto& p : g.points) {
    s += fmt::format("=== grid point {}: {} ===\n\n", p.index, p.label);
    s += point_text(p.analysis) + "\n";
  }
  s += "=== across grid points ===\n\n";
  s += db::format_table(grid_across_table(g), db::Format::table);
  return s;
}

std::string render_grid(const GridAnalysis& g, OutputFormat format) {
  switch (format) {
    // CSV: every point's paper table in one file, each row led by its point.
    case OutputFormat::csv: return db::format_table(grid_paper_table(g), db::Format::csv);
    case OutputFormat::json: return to_json(g).dump(2) + "\n";
    case OutputFormat::table: return render_grid_text(g, [](const SweepAnalysis& a) { return render_text(a); });
    case OutputFormat::markdown: {
      std::string s = fmt::format("# Sweep `{}`: {} grid points\n\n", g.sweep, g.points.size());
      s += "## Across grid points\n\n" + render_grid_across_markdown(g) + "\n";
      for (const auto& p : g.points) {
        s += fmt::format("## Grid point {}: {}\n\n", p.index, p.label);
        s += render_markdown(p.analysis) + "\n";
      }
      return s;
    }
  }
  return "";
}

GridReportResult write_grid_report(const SweepData& data, const ReportOptions& options) {
  EGM_REQUIRE(!options.out_dir.empty(), ConfigError, "egm report needs an output folder (--out DIR)");
  GridReportResult result;
  result.out_dir = options.out_dir;
  result.analysis = analyze_grid(data, options.analysis);
  const GridAnalysis& g = result.analysis;
  make_dirs(options.out_dir);
  std::vector<std::string> notes;
  result.plots_made = true;
  std::string index = fmt::format("# Report: sweep `{}` ({} grid points)\n\n", g.sweep, g.points.size());
  if (!g.description.empty()) index += g.description + "\n\n";
  index += "- [grid.md](grid.md): across grid points, and every point's main table\n";
  index += "- [grid.csv](grid.csv): the across-points comparison, one row per point and quantity\n";
  index += "- [grid_main.csv](grid_main.csv): every point's paper table\n";
  index += "- [grid.json](grid.json): every number\n";
  std::string md = fmt::format("# Sweep `{}`: across grid points\n\n", g.sweep) + render_grid_across_markdown(g) + "\n";
  // Each point gets a full report of its own in point-N/, as a sweep without a grid would.
  for (const auto& p : split_grid_points(data)) {
    ReportOptions one = options;
    const std::string sub = fmt::format("point-{}", p.index);
    one.out_dir = options.out_dir + "/" + sub;
    const ReportResult r = write_report(p.data, one);
    // Each point's files under its folder, so the grid's result lists every file written.
    for (const auto& f : r.files) result.files.push_back(sub + "/" + f);
    // One point without images marks the whole grid's report, with that point's reason.
    if (!r.plots_made) {
      result.plots_made = false;
      notes.push_back(fmt::format("{}: {}", sub, r.plot_message));
    }
    index += fmt::format("- [{}/index.md]({}/index.md): grid point {}, {}\n", sub, sub, p.index, p.label);
    md += fmt::format("## Grid point {}: {} ([full report]({}/index.md))\n\n{}\n", p.index, p.label, sub,
                      render_markdown_main(r.analysis));
  }
  auto write = [&](const std::string& name, const std::string& bytes) {
    atomic_write_file(options.out_dir + "/" + name, bytes);
    result.files.push_back(name);
  };
  write("grid.md", md);
  write("grid.csv", db::format_table(grid_across_table(g), db::Format::csv));
  write("grid_main.csv", db::format_table(grid_paper_table(g), db::Format::csv));
  write("grid.json", to_json(g).dump(2) + "\n");
  // index.md last, after every file it links.
  write("index.md", index);
  if (!result.plots_made) result.plot_message = fmt::format("{}", fmt::join(notes, "; "));
  return result;
}

}  // namespace egm::analysis
