// `/sweep/NAME`: one sweep. Its progress and running cells, then the
// analysis as `egm analyze` and `egm report` make it (src/analysis): the
// verdict, the paper's table, the interaction, the figures, the report's
// sections; with a grid, a table of points and the across-points comparison
// (`?point=N` gives one point the whole page); the compute statement; every
// cell; the spec. `/sweep/NAME/TABLE.csv|json` downloads each table.
#include "serve/pages.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "analysis/compute.h"
#include "analysis/figures.h"
#include "analysis/grid_analysis.h"
#include "analysis/paper_table.h"
#include "analysis/render.h"
#include "analysis/report.h"
#include "analysis/sequences.h"
#include "analysis/sweep_analysis.h"
#include "analysis/sweep_data.h"
#include "analysis/tables.h"
#include "util/error.h"

namespace egm::serve {

namespace {

// Grid points (schema 3 adds cells.grid_point/grid_json): cell id -> point,
// and each point's label by the analysis's one rule (split_grid_points,
// grid_point_label), as egm analyze and egm report name them. Empty for a
// sweep without a grid or an older database.
struct GridInfo {
  std::map<int64_t, int64_t> point_of;   // cell id -> point
  std::map<int64_t, std::string> label;  // point -> "train.lr=0.001 ..."
};

GridInfo grid_info(const analysis::SweepData& data) {
  GridInfo g;
  if (!analysis::has_grid(data)) return g;
  std::vector<analysis::GridPointData> points;
  try {
    points = analysis::split_grid_points(data);
  } catch (const Error& e) {
    // A grid that cannot be split (e.g. a cell's unreadable grid_json) is a 400 for this request, not a 500.
    fail(400, fmt::format("sweep '{}' cannot be split into its grid points: {}", data.sweep.name, e.what()));
  }
  for (const auto& p : points) {
    g.label[p.index] = p.label.empty() ? fmt::format("point {}", p.index) : p.label;
    for (const auto& cell : p.data.cells) g.point_of[cell.row.id] = p.index;
  }
  return g;
}

// The sweep's data restricted to one grid point.
analysis::SweepData only_point(const analysis::SweepData& data, const GridInfo& g, int64_t point) {
  analysis::SweepData d;
  d.sweep = data.sweep;
  d.spec = data.spec;
  for (const auto& cell : data.cells) {
    auto it = g.point_of.find(cell.row.id);
    if (it == g.point_of.end() || it->second != point) continue;
    d.cells.push_back(cell);
    // The cell's val curve and parameters come along, so the point's analysis sees only its own cells.
    if (auto c = data.val_curves.find(cell.row.id); c != data.val_curves.end()) d.val_curves.insert(*c);
    if (auto p = data.params.find(cell.row.id); p != data.params.end()) d.params.insert(*p);
  }
  return d;
}

analysis::AnalysisOptions analysis_options(const Params& params) {
  analysis::AnalysisOptions o;
  o.allow_mixed_setups = true;  // shown as a warning instead of refusing the page
  if (auto it = params.find("metric"); it != params.end()) {
    try {
      o.metric = analysis::parse_metric(it->second);
    } catch (const Error& e) {
      fail(400, e.what());
    }
  }
  return o;
}

std::optional<int64_t> point_param(const Params& params, const GridInfo& g) {
  auto it = params.find("point");
  if (it == params.end()) return std::nullopt;
  int64_t point = -1;
  try {
    size_t used = 0;
    // The whole value must be the number: stoll alone would read "3abc" as 3.
    point = std::stoll(it->second, &used);
    if (used != it->second.size()) point = -1;
  } catch (const std::exception&) {
    point = -1;
  }
  if (!g.label.count(point))
    fail(404, g.label.empty() ? fmt::format("this sweep has no grid points (point={})", it->second)
                              : fmt::format("no grid point '{}' in this sweep (points 0..{})", it->second,
                                            g.label.rbegin()->first));
  return point;
}

db::Table cells_table(const analysis::SweepData& data, const GridInfo& g) {
  db::Table t;
  t.columns = {"key", "variant", "seed", "status", "attempts", "failures", "max_attempts", "latest_step", "max_steps"};
  for (const MeasurementField& f : cell_measurements()) t.columns.push_back(f.name);
  t.columns.push_back("last_error");
  // The grid_point column only for a grid sweep, after seed; each row inserts its value at the same place.
  if (!g.point_of.empty()) t.columns.insert(t.columns.begin() + 3, "grid_point");
  for (const auto& cell : data.cells) {
    const db::CellRow& r = cell.row;
    std::vector<db::Value> row{r.key, r.variant, r.seed, db::to_string(r.status), int64_t{r.attempts},
                               int64_t{r.failures}, int64_t{r.max_attempts}, opt(r.latest_step), r.max_steps};
    for (const MeasurementField& f : cell_measurements()) row.push_back(opt(r.results.*f.value));
    row.push_back(r.last_error ? db::Value(first_line(*r.last_error)) : db::Value());
    if (!g.point_of.empty()) {
      auto it = g.point_of.find(r.id);
      row.insert(row.begin() + 3, it == g.point_of.end() ? db::Value() : db::Value(it->second));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

db::Table running_table(const SweepState& st) {
  db::Table t;
  t.columns = {st.stale ? "interrupted" : "running", "attempt", "step", "max_steps", "loss", "steps_per_s", "host",
               "device", "started_utc"};
  for (const auto& r : st.progress.running_cells)
    t.rows.push_back({r.key, int64_t{r.attempt}, opt(r.step), r.max_steps, opt(r.loss), opt(r.steps_per_s), r.host,
                      r.device, db::format_utc(r.started_at)});
  return t;
}

// nullptr-terminated: sweep_table_names() hands the array out without its length.
const char* const kSweepTables[] = {"paper",      "summary",   "per_seed",      "deltas",     "interaction",
                                    "published",  "excluded",  "conflicts",     "provenance", "reused",    "mope_runs",
                                    "mope_pairs", "mope_k_scores", "gates",     "gates_by_layer", "cells",
                                    "running",    "grid",      "grid_across",   nullptr};

std::vector<std::string> table_names() {
  std::vector<std::string> names;
  for (const char* const* t = kSweepTables; *t; ++t) names.push_back(*t);
  return names;
}

db::Table analysis_table(const std::string& name, const analysis::SweepAnalysis& a) {
  if (name == "paper") return analysis::paper_table(a);
  if (name == "summary") return analysis::summary_table(a);
  if (name == "per_seed") return analysis::per_seed_table(a);
  if (name == "deltas") return analysis::delta_table(a);
  if (name == "interaction") return analysis::interaction_table(a);
  if (name == "published") return analysis::published_table(a);
  if (name == "excluded") return analysis::excluded_table(a);
  if (name == "conflicts") return analysis::setup_conflict_table(a);
  if (name == "provenance") return analysis::provenance_table(a);
  if (name == "reused") return analysis::reused_table(a);
  if (name == "mope_runs") return analysis::mope_run_table(a);
  if (name == "mope_k_scores") return analysis::k_score_table(a);
  if (name == "mope_pairs") return analysis::mope_pair_table(a);
  if (name == "gates") return analysis::gate_table(a);
  if (name == "gates_by_layer") return analysis::gate_layer_table(a);
  return {};
}

// The across-points comparison as egm analyze prints it: one row per quantity
// (means, deltas against the baseline, the interaction), one column per
// point ("+0.0521 [+0.0312, +0.0730]"), then on which side of 0 it holds.
db::Table grid_across_wide(const analysis::GridAnalysis& g) {
  db::Table t;
  t.columns = {"quantity"};
  for (const auto& p : g.points) t.columns.push_back(fmt::format("point {}: {}", p.index, p.label));
  t.columns.push_back("holds");
  for (const auto& r : g.across) {
    std::vector<db::Value> row{r.quantity};
    for (size_t i = 0; i < r.points.size(); ++i) row.push_back(analysis::across_cell_text(r, i));
    row.push_back(r.holds);
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string verdict_html(const analysis::SweepAnalysis& a) {
  if (a.interaction)
    return "<p class=\"verdict\" id=\"verdict\">" + escape(a.interaction->verdict_text) + "</p>\n";
  return "<p class=\"verdict\" id=\"verdict\">no interaction: " + escape(a.no_interaction_reason) + "</p>\n";
}

// The paper's table as an HTML table: the display form (paper_table.h; the
// Markdown report's table: mean ± half-width (n), delta ± half-width, the
// published columns beside ours, the interaction row), downloads in full
// precision (paper.csv|json).
std::string main_table_html(const analysis::SweepAnalysis& a, const std::string& base, const std::string& suffix,
                            const std::string& id) {
  TableOptions o;
  o.id = id;
  o.links = base + "/paper";
  o.links_query = suffix;
  o.null_text = "-";
  return html_table(analysis::paper_display_table(analysis::build_paper_table(a)), o);
}

// The analysis sections of a sweep (or of one grid point): the verdict, the
// paper's table and the interaction, the figures (analysis/figures.h, the
// ones egm report draws with gnuplot), then the sections of the Markdown
// report with its number formats, each with its full-precision download under
// `base` and `suffix` (the query string that selects the same point and metric).
std::string analysis_sections(const analysis::SweepData& data, const analysis::SweepAnalysis& a,
                              const std::string& base, const std::string& suffix) {
  std::string body;
  body += verdict_html(a);
  body += fmt::format("<p class=\"note\">metric: {} ({}); {} of {} cells used{}</p>\n", analysis::metric_name(a.metric),
                      escape(analysis::metric_description(a.metric)), a.cells_used, a.cells_total,
                      a.excluded.empty() ? "" : fmt::format("; {} excluded (table below)", a.excluded.size()));
  if (!a.setup_conflicts.empty())
    body += "<p class=\"error\">WARNING: cells paired here ran with different world sizes or backends (table "
            "'conflicts' below).</p>\n";
  body += "<h2>The paper's table</h2>\n";
  if (a.interaction || !a.variants.empty()) body += main_table_html(a, base, suffix, "main-table");
  if (a.interaction)
    body += "<pre id=\"interaction-lines\">" + escape(analysis::render_interaction_lines(a)) + "</pre>\n";
  // Each claim's anytime-valid sequence beside the fixed-n interval, as egm
  // analyze and egm report print it (alpha = 1 - level, Bonferroni over the claims).
  std::vector<analysis::ClaimSequence> sequences;
  if (a.level > 0.5) {
    analysis::SequenceOptions so;
    so.alpha = 1.0 - a.level;
    try {
      sequences = analysis::claim_sequences(a, data.spec.seeds, so);
    } catch (const Error& e) {
      body += "<p class=\"error\">no confidence sequences: " + escape(e.what()) + "</p>\n";
    }
    if (!sequences.empty())
      body += "<pre id=\"sequences\">" + escape(analysis::render_sequences_text(sequences, so, a.level)) + "</pre>\n";
  }
  auto table_section = [&](const std::string& name, const std::string& heading, const std::string& intro,
                           const db::Table& t, int digits) {
    if (t.rows.empty()) return;
    body += "<h2>" + escape(heading) + "</h2>\n";
    if (!intro.empty()) body += "<p class=\"note\">" + escape(intro) + "</p>\n";
    TableOptions o;
    o.id = "table-" + name;
    o.links = base + "/" + name;
    o.links_query = suffix;  // the download keeps the point and metric
    o.digits = digits;
    o.null_text = "-";
    body += html_table(t, o);
  };
  body += "<h2>Plots</h2>\n<div class=\"plots\">\n";
  // The report's figures (one list, analysis/figures.h); a sweep without
  // curves yet still shows where they will be.
  for (const analysis::Figure& f : analysis::sweep_figures(data, a, sequences, /*empty_curves=*/true))
    body += svg_figure(f);
  body += "</div>\n";
  table_section("interaction", "The 2x2 interaction", "", analysis::interaction_table(a), 4);
  for (const analysis::ReportSection& sec : analysis::report_sections(a))
    table_section(sec.name, sec.title, sec.intro, sec.table, sec.digits);
  table_section("per_seed", "Per seed", "", analysis::per_seed_table(a), 5);
  if (!a.notes.empty()) {
    body += "<h2>Notes</h2>\n<ul class=\"note\">\n";
    for (const auto& n : a.notes) body += "<li>" + escape(n) + "</li>\n";
    body += "</ul>\n";
  }
  return body;
}

// What a request for /sweep/NAME[/TABLE] asks about: the sweep, its cells
// (all of them, and those of the chosen grid point), and the page's links.
struct SweepRequest {
  std::string name;
  std::string base;    // "/sweep/NAME"
  std::string suffix;  // the query, for links that keep it ("?point=1&metric=full_val")
  analysis::AnalysisOptions options;
  analysis::SweepData all;
  GridInfo grid;
  std::optional<int64_t> point;
  analysis::SweepData data;  // all, or the chosen point's cells
  // With a grid and no point chosen, each point is analysed on its own: cells
  // of different points are different configurations and never pair.
  bool per_point = false;
};

SweepRequest read_request(Context& c, const std::string& name, const Params& params) {
  SweepRequest r;
  r.name = name;
  r.options = analysis_options(params);
  r.all = analysis::load_sweep(c.db, name);
  r.grid = grid_info(r.all);
  r.point = point_param(params, r.grid);
  r.base = "/sweep/" + url_encode(name);
  // Rebuilt from the checked parameters, so every link and download keeps the point and metric.
  for (const auto& [k, v] : params) r.suffix += (r.suffix.empty() ? "?" : "&") + url_encode(k) + "=" + url_encode(v);
  r.data = r.point ? only_point(r.all, r.grid, *r.point) : r.all;
  r.per_point = !r.grid.label.empty() && !r.point;
  return r;
}

analysis::SweepAnalysis analyse(const SweepRequest& r, const analysis::SweepData& d) {
  try {
    return analysis::analyze_sweep(d, r.options);
  } catch (const Error& e) {
    fail(400, fmt::format("sweep '{}' cannot be analysed: {}", r.name, e.what()));
  }
}

analysis::GridAnalysis analyse_grid(const SweepRequest& r) {
  try {
    return analysis::analyze_grid(r.all, r.options);
  } catch (const Error& e) {
    fail(400, fmt::format("sweep '{}' cannot be analysed: {}", r.name, e.what()));
  }
}

// `/sweep/NAME/TABLE.csv|json`: one of kSweepTables as a file; 404 for a table
// the sweep does not have, 400 for an analysis table of a grid without a point.
Response download_table(Context& c, const db::SweepRow& sweep, const SweepRequest& r,
                        const std::string& table_segment) {
  const auto dl = download_name(table_segment);
  const std::string table = dl ? dl->first : table_segment;
  bool known = false;
  for (const char* const* t = kSweepTables; *t; ++t) known = known || table == *t;
  if (!dl || !known)
    fail(404, fmt::format("no table '{}' for sweep '{}'; tables: {}.csv or .json", table_segment, r.name,
                          fmt::join(table_names(), ", ")));
  // The point is part of the file name, so downloads of two points do not overwrite each other.
  const std::string filename = r.name + (r.point ? fmt::format("-point{}", *r.point) : "") + "-" + table;
  if (table == "cells") return download(cells_table(r.data, r.grid), dl->second, filename);
  // Not an analysis table: the live state of the sweep's running cells.
  if (table == "running") return download(running_table(sweep_state(c, sweep)), dl->second, filename);
  if (table == "grid") {
    db::Table t;
    t.columns = {"grid_point", "label"};
    for (const auto& [p, label] : r.grid.label) t.rows.push_back({p, label});
    return download(t, dl->second, filename);
  }
  if (table == "grid_across") {
    if (r.grid.label.empty()) fail(404, fmt::format("sweep '{}' has no grid points", r.name));
    try {
      // Across points needs every point's cells (r.all), whatever point the request chose.
      return download(analysis::grid_across_table(analysis::analyze_grid(r.all, r.options)), dl->second, filename);
    } catch (const Error& e) {
      fail(400, fmt::format("sweep '{}' cannot be analysed: {}", r.name, e.what()));
    }
  }
  // The analysis tables are of one 2x2; with a grid that means one chosen point.
  if (r.per_point)
    fail(400, fmt::format("sweep '{}' has a grid: choose a point (?point=0..{}) for table '{}'", r.name,
                          r.grid.label.rbegin()->first, table));
  return download(analysis_table(table, analyse(r, r.data)), dl->second, filename);
}

// The page's head: title, the point shown, description, provenance, progress,
// running cells and the cells that failed.
std::string head_html(const Context& c, const db::SweepRow& sweep, const SweepState& st, const SweepRequest& r) {
  const db::SweepProgress& p = st.progress;
  std::string body = fmt::format("<h1>Sweep {} {}</h1>\n", escape(r.name), status_span(st.status));
  if (r.point) body += "<p>grid point " + std::to_string(*r.point) + ": <strong>" +
                       escape(r.grid.label.at(*r.point)) + "</strong> (<a href=\"" + escape(r.base) +
                       "\">all points</a>)</p>\n";
  if (!r.data.spec.description.empty()) body += "<p>" + escape(r.data.spec.description) + "</p>\n";
  body += fmt::format("<p class=\"note\">created {} UTC, spec {}{}</p>\n", escape(db::format_utc(sweep.created_at)),
                      escape(sweep.spec_hash.substr(0, 12)),
                      sweep.slurm_job_id ? ", slurm job " + escape(*sweep.slurm_job_id) : "");
  // The data behind the numbers, and who runs the sweep now (schema v9).
  body += "<p class=\"note\" id=\"corpus\">corpus: " + escape(db::describe_corpus(sweep)) + "</p>\n";
  if (sweep.owner)
    body += fmt::format("<p class=\"note\" id=\"owner\">run by the coordinator pid {} on {}{}</p>\n", sweep.owner->pid,
                        escape(sweep.owner->host),
                        sweep.owner->slurm_job ? " (Slurm job " + escape(*sweep.owner->slurm_job) + ")" : "");
  body += "<h2>Progress</h2>\n";
  body += fmt::format(
      "<p id=\"progress\" data-steps-done=\"{}\" data-cells-done=\"{}\">{} <span id=\"steps\">{}/{} steps</span> - "
      "<span id=\"cells\">{} cells: {} done, {} running, {} pending, {} failed ({} with no retries left), {} "
      "interrupted</span> - <span id=\"eta\">{}</span></p>\n",
      p.steps_done, p.done, progress_bar(st.fraction), p.steps_done, st.steps_to_run, p.total, p.done, p.running,
      p.pending, p.failed, p.exhausted, p.interrupted, st.stale ? "no ETA" : escape(eta_text(p.eta_s)));
  if (st.stale)
    body += fmt::format("<p class=\"error\" id=\"stale\">stale: no heartbeat since {} UTC ({} ago), coordinator gone? "
                        "Its running cells count as interrupted; run the sweep again (egm sweep SPEC) to resume "
                        "them.</p>\n",
                        escape(db::format_utc(*st.stale)), escape(db::format_duration(c.now - *st.stale)));
  if (!p.running_cells.empty()) {
    TableOptions o;
    o.id = "table-running";
    o.links = r.base + "/running";
    o.link_column = 0;
    o.link_prefix = r.base + "/cell/";
    body += html_table(running_table(st), o);
  }
  // Each failed cell with its first error line; "given up" once no attempts are left.
  for (const auto& cell : r.data.cells)
    if (cell.row.status == db::CellStatus::failed)
      body += fmt::format("<p class=\"error\">failed {} (failure {} of {} allowed; {}): {}</p>\n", escape(cell.row.key),
                          cell.row.failures, cell.row.max_attempts,
                          cell.row.failures >= cell.row.max_attempts ? "given up" : "will retry",
                          escape(first_line(cell.row.last_error.value_or("(no error text)"))));
  return body;
}

// A grid with no point chosen: a table of the points, the across-points
// comparison, then each point's verdict and main table.
std::string grid_points_html(const SweepRequest& r) {
  std::string body = "<h2>Grid points</h2>\n<p class=\"note\">Each point is its own 2x2: cells of different points "
                     "never pair. Open a point for its tables and plots.</p>\n";
  const analysis::GridAnalysis g = analyse_grid(r);
  db::Table t;
  t.columns = {"point", "values", "cells", "used", "interaction", "ci_low", "ci_high", "verdict"};
  std::string sections;
  for (const auto& point_analysis : g.points) {
    const int64_t pt = point_analysis.index;
    const std::string& label = point_analysis.label;
    const analysis::SweepAnalysis& a = point_analysis.analysis;
    const auto* ia = a.interaction ? &*a.interaction : nullptr;
    t.rows.push_back({pt, label, static_cast<int64_t>(a.cells_total), static_cast<int64_t>(a.cells_used),
                      ia ? db::Value(ia->result.estimate) : db::Value(),
                      ia && ia->result.interval.has_interval ? db::Value(ia->result.interval.ci_low) : db::Value(),
                      ia && ia->result.interval.has_interval ? db::Value(ia->result.interval.ci_high) : db::Value(),
                      ia ? db::Value(std::string(analysis::verdict_label(ia->result.verdict))) : db::Value()});
    sections += fmt::format("<h2 id=\"point-{0}\"><a href=\"{1}?point={0}\">point {0}: {2}</a></h2>\n", pt,
                            escape(r.base), escape(label));
    sections += verdict_html(a);
    if (a.interaction || !a.variants.empty())
      sections += main_table_html(a, r.base, fmt::format("?point={}", pt), fmt::format("main-table-{}", pt));
  }
  TableOptions o;
  o.id = "table-grid";
  o.links = r.base + "/grid";
  body += html_table(t, o);
  body += "<h2 id=\"across\">Across points</h2>\n<p class=\"note\">Does it hold at every point? Each variant's "
          "mean, each delta against the baseline (positive = better) and the interaction (positive = "
          "superadditive), with " + escape(fmt::format("{:.0f}%", 100 * r.options.level)) +
          " intervals over seeds; the download is the long form, one row per point and quantity.</p>\n";
  TableOptions across;
  across.id = "table-grid-across";
  across.links = r.base + "/grid_across";
  return body + html_table(grid_across_wide(g), across) + sections;
}

}  // namespace

const char* const* sweep_table_names() { return kSweepTables; }

Response sweep_page(Context& c, const std::string& name, const std::string& table_segment, const Params& params) {
  const db::SweepRow sweep = require_sweep(c, name);
  const SweepRequest r = read_request(c, name, params);
  // A download answers before the page's own state and analysis are built.
  if (!table_segment.empty()) return download_table(c, sweep, r, table_segment);

  const SweepState st = sweep_state(c, sweep);
  std::string body = head_html(c, sweep, st, r);
  std::vector<analysis::Claim> claims;
  if (r.per_point) {
    body += grid_points_html(r);
  } else {
    const analysis::SweepAnalysis a = analyse(r, r.data);
    claims = analysis::claims_of(a);
    body += analysis_sections(r.data, a, r.base, r.suffix);
  }
  // What the numbers cost (src/analysis/compute.h): the whole sweep, whatever point is shown.
  body += "<h2 id=\"compute\">Compute</h2>\n<pre id=\"compute-statement\">" +
          escape(analysis::render_compute_text(analysis::compute_statement(c.db, name, claims))) + "</pre>\n";
  body += "<h2>Cells</h2>\n";
  TableOptions o;
  o.id = "table-cells";
  o.links = r.base + "/cells";
  o.link_column = 0;
  o.link_prefix = r.base + "/cell/";
  o.links_query = r.suffix;
  body += html_table(cells_table(r.data, r.grid), o);
  body += "<details><summary>the spec (JSON)</summary><pre>" + escape(sweep.spec_json) + "</pre></details>\n";
  Response resp;
  resp.body = page(c.page_options("sweep " + name, st.live()), body);
  return resp;
}

}  // namespace egm::serve
