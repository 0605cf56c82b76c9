// `/sweep/NAME/cell/KEY`: one cell. Status and attempts, results, loss
// curves, learned parameters (the MoPE plane of this cell), every attempt and
// event, the run config; `.../TABLE.csv|json` downloads attempts, events,
// metrics and params.
#include "serve/pages.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "analysis/figures.h"
#include "analysis/grid_analysis.h"
#include "analysis/param_analysis.h"
#include "analysis/sweep_data.h"
#include "db/reuse.h"
#include "db/sweep_reads.h"
#include "spec/experiment_spec.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace egm::serve {
namespace {

// The cell's loss curves: train (every recorded step) and the periodic evals.
std::string loss_curves_html(const db::Table& metrics) {
  analysis::Figure plot;
  plot.name = "loss";
  plot.title = "loss curves";
  plot.x_label = "step";
  plot.y_label = "loss (nats)";
  size_t colour = 0;
  for (const MetricSplit s : {MetricSplit::train, MetricSplit::eval_train, MetricSplit::eval_val}) {
    const std::string split = to_string(s);
    std::vector<double> xs, ys;
    for (const auto& row : metrics.rows) {
      // The metrics table's columns: step, split, loss, lr, tokens_per_s, attempt, time.
      if (std::get<std::string>(row[1]) != split) continue;
      xs.push_back(static_cast<double>(std::get<int64_t>(row[0])));
      // A NULL loss becomes NaN, where the SVG line lifts its pen: the curve shows a gap.
      ys.push_back(std::holds_alternative<double>(row[2]) ? std::get<double>(row[2]) : std::nan(""));
    }
    if (!xs.empty()) plot.line(xs, ys, analysis::figure_colour(colour), split, s == MetricSplit::eval_train);
    // Advanced for every split, drawn or not, so a split keeps its colour when another has no points.
    ++colour;
  }
  return "<h2>Loss curves</h2>\n<div class=\"plots\">" + svg_figure(plot) + "</div>\n";
}

// The learned parameters at the cell's first and last snapshot, with its MoPE
// pairs in the omega-sigma plane; nothing when it has none.
std::string learned_html(const db::Table& learned, const db::CellRow& cell, const std::string& key,
                         const std::string& base) {
  if (learned.rows.empty()) return "";
  // The MoPE pairs of this cell in the omega-sigma plane.
  std::map<int64_t, analysis::MopePair> pairs;
  for (const auto& row : learned.rows) {
    // The learned table's columns: module, layer, idx, name, at_step_0, learned, step.
    if (std::get<std::string>(row[0]) != "mope") continue;
    auto& pr = pairs[std::get<int64_t>(row[2])];
    const std::string& n = std::get<std::string>(row[3]);
    const double at0 = std::holds_alternative<double>(row[4]) ? std::get<double>(row[4]) : std::nan("");
    const double now = std::holds_alternative<double>(row[5]) ? std::get<double>(row[5]) : std::nan("");
    if (n == "omega") pr.omega = now, pr.omega0 = at0;
    if (n == "sigma") pr.sigma = now, pr.sigma0 = at0;
    pr.has_init = std::isfinite(pr.omega0) && std::isfinite(pr.sigma0) && pr.omega0 > 0;
  }
  std::string body = "<h2>Learned parameters</h2>\n";
  if (!pairs.empty()) {
    analysis::MopeRun run;
    run.variant = cell.variant;
    run.key = key;
    for (auto& [idx, pr] : pairs) {
      pr.idx = idx;
      run.pairs.push_back(pr);
    }
    body += "<div class=\"plots\">" + svg_figure(*analysis::omega_sigma_figure({run})) + "</div>\n";
  }
  TableOptions o;
  o.id = "table-params";
  o.links = base + "/params";
  o.digits = 6;
  body += html_table(learned, o);
  return body;
}

}  // namespace

Response cell_page(Context& c, const std::string& sweep_name, const std::string& key, const std::string& table_segment) {
  const db::SweepRow sweep = require_sweep(c, sweep_name);
  const std::optional<int64_t> cell_id = db::find_cell(c.db, sweep.id, key);
  if (!cell_id) fail(404, fmt::format("no cell '{}' in sweep '{}'", key, sweep_name));
  const db::CellRow cell = c.db.cell(*cell_id);
  // A table segment (.../attempts.csv) answers with that download instead of the page.
  if (!table_segment.empty()) {
    const auto dl = download_name(table_segment);
    const std::string table = dl ? dl->first : table_segment;
    const std::optional<db::CellTable> which = db::parse_cell_download(table);
    if (!dl || !which)
      fail(404, fmt::format("no table '{}' for cell '{}'; tables: attempts, events, metrics, params (.csv or .json)",
                            table_segment, key));
    return download(db::cell_table(c.db, *which, *cell_id), dl->second, sweep_name + "-" + key + "-" + table);
  }
  const std::string base = "/sweep/" + url_encode(sweep_name) + "/cell/" + url_encode(key);
  // Reload only while the cell runs under a live coordinator; a stale one's page would reload forever.
  const bool live = cell.status == db::CellStatus::running && !db::stale_since(sweep, c.now);
  std::string body = fmt::format("<h1>Cell {} {}</h1>\n<p>sweep <a href=\"/sweep/{}\">{}</a>, variant {}, seed {}",
                                 escape(key), status_span(db::to_string(cell.status)), escape(url_encode(sweep_name)),
                                 escape(sweep_name), escape(cell.variant), cell.seed);
  if (cell.grid_point) {
    // The label by the analysis's rule (the sweep page names the point the same way).
    std::string label = fmt::format("point {}", *cell.grid_point);
    try {
      // grid_json may come from a database made elsewhere: parsed under the limits for user input.
      const nlohmann::json values = parse_json(cell.grid_json.value_or("{}"), JsonLimits::user(), "cells.grid_json");
      std::vector<std::string> axes;
      try {
        for (const spec::GridAxis& a : spec::read_stored_spec(sweep.spec_json).grid) axes.push_back(a.path);
      } catch (const Error&) {
        // an unreadable stored spec: the point's own key order
      }
      if (const std::string l = analysis::grid_point_label(values, axes); !l.empty()) label = l;
    } catch (const Error&) {
      label += " (unreadable grid_json)";
    }
    body += fmt::format(", grid point {}: {}", *cell.grid_point, escape(label));
  }
  body += fmt::format("; {} attempt{} ({} failed, {} allowed); step {} of {}</p>\n", cell.attempts,
                      cell.attempts == 1 ? "" : "s", cell.failures, cell.max_attempts,
                      cell.latest_step ? std::to_string(*cell.latest_step) : "-", cell.max_steps);
  if (cell.last_error) body += "<p class=\"error\">last error: " + escape(first_line(*cell.last_error)) + "</p>\n";
  // Not trained by this sweep: the finished run of the same identity it took (db/reuse.h).
  for (const db::ReusedCell& r : db::reused_cells(c.db, sweep.id))
    if (r.cell_id == *cell_id)
      body += "<p class=\"note\" id=\"reused\">reused, not trained here: " + escape(r.from) + "</p>\n";
  {
    db::Table t;
    t.rows.emplace_back();
    // One row: every measurement field (run/outcome.h) in its order, then the final step.
    for (const MeasurementField& f : cell_measurements()) {
      t.columns.push_back(f.name);
      t.rows.back().push_back(opt(cell.results.*f.value));
    }
    t.columns.push_back("final_step");
    t.rows.back().push_back(opt(cell.final_step));
    TableOptions o;
    o.id = "table-results";
    o.digits = 6;
    body += "<h2>Results</h2>\n" + html_table(t, o);
  }
  const db::Table metrics = db::cell_table(c.db, db::CellTable::metrics, *cell_id);
  body += loss_curves_html(metrics);
  body += learned_html(db::cell_table(c.db, db::CellTable::learned, *cell_id), cell, key, base);
  {
    TableOptions o;
    o.id = "table-attempts";
    o.links = base + "/attempts";
    body += "<h2>Attempts</h2>\n" + html_table(db::cell_table(c.db, db::CellTable::attempts, *cell_id), o);
    o.id = "table-events";
    o.links = base + "/events";
    body += "<h2>Events</h2>\n" + html_table(db::cell_table(c.db, db::CellTable::events, *cell_id), o);
  }
  body += fmt::format("<p class=\"downloads\">every metric point ({}): <a href=\"{}/metrics.csv\">CSV</a><a "
                      "href=\"{}/metrics.json\">JSON</a></p>\n",
                      metrics.rows.size(), escape(base), escape(base));
  body += "<details><summary>the run config (JSON)</summary><pre>" + escape(cell.config_json) + "</pre></details>\n";
  Response r;
  r.body = page(c.page_options("cell " + key, live), body);
  return r;
}

}  // namespace egm::serve
