#include "serve/site.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "analysis/compute.h"
#include "analysis/grid_analysis.h"
#include "analysis/render.h"
#include "analysis/report.h"
#include "analysis/sweep_analysis.h"
#include "analysis/sweep_data.h"
#include "analysis/tables.h"
#include "db/read_only_query.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "db/table_format.h"
#include "serve/html.h"
#include "serve/svg.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace egm::serve {

namespace {

// ---- errors and requests ------------------------------------------------------------

struct HttpError : std::runtime_error {
  int status;
  HttpError(int s, const std::string& message) : std::runtime_error(message), status(s) {}
};
[[noreturn]] void fail(int status, const std::string& message) { throw HttpError(status, message); }

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    default: return "Error";
  }
}

using Params = std::map<std::string, std::string>;

// Strict: every item "key=value" with well-formed escapes, each key once, and
// only the keys this route knows.
Params parse_query(std::string_view qs, const std::vector<std::string>& allowed, const std::string& route) {
  Params params;
  size_t pos = 0;
  while (pos <= qs.size() && !qs.empty()) {
    size_t end = qs.find('&', pos);
    if (end == std::string_view::npos) end = qs.size();
    const std::string_view item = qs.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) {
      if (end == qs.size()) break;
      fail(400, "malformed query string: an empty item between '&'s");
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      fail(400, fmt::format("malformed query string: '{}' has no '=' (write key=value)", item));
    const auto key = url_decode(item.substr(0, eq), true);
    const auto value = url_decode(item.substr(eq + 1), true);
    if (!key || !value) fail(400, fmt::format("malformed query string: bad %-escape in '{}'", item));
    if (std::find(allowed.begin(), allowed.end(), *key) == allowed.end())
      fail(400, fmt::format("unknown parameter '{}' for {}{}{}", *key, route, allowed.empty() ? " (it takes none)" : "; it takes: ",
                            fmt::join(allowed, ", ")));
    if (!params.emplace(*key, *value).second) fail(400, fmt::format("parameter '{}' given twice", *key));
    if (end == qs.size()) break;
  }
  return params;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  if (path.empty() || path[0] != '/') fail(400, "the request target must start with '/'");
  size_t pos = 1;
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    const auto part = url_decode(path.substr(pos, end - pos), false);
    if (!part) fail(400, fmt::format("malformed path: bad %-escape in '{}'", path));
    parts.push_back(*part);
    pos = end + 1;
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // "/x/" is "/x"
  for (const auto& p : parts)
    if (p.empty()) fail(404, fmt::format("no page at '{}' (an empty path segment)", path));
  return parts;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "name.csv" -> {"name", csv}; no extension -> nullopt.
std::optional<std::pair<std::string, db::Format>> download_name(const std::string& segment) {
  if (ends_with(segment, ".csv")) return std::make_pair(segment.substr(0, segment.size() - 4), db::Format::csv);
  if (ends_with(segment, ".json")) return std::make_pair(segment.substr(0, segment.size() - 5), db::Format::json);
  return std::nullopt;
}

Response download(const db::Table& table, db::Format format, const std::string& filename) {
  Response r;
  r.content_type = format == db::Format::csv ? "text/csv; charset=utf-8" : "application/json";
  r.body = db::format_table(table, format);
  r.filename = filename + (format == db::Format::csv ? ".csv" : ".json");
  return r;
}

db::Value opt(const std::optional<double>& v) { return v && std::isfinite(*v) ? db::Value(*v) : db::Value(); }
db::Value opt(const std::optional<int64_t>& v) { return v ? db::Value(*v) : db::Value(); }
db::Value opt(const std::optional<std::string>& v) { return v ? db::Value(*v) : db::Value(); }

std::string status_span(const std::string& status) {
  return "<span class=\"status status-" + escape(status) + "\">" + escape(status) + "</span>";
}

std::string eta_text(const std::optional<double>& eta) {
  if (!eta) return "ETA unknown";
  return *eta == 0 ? "nothing left to run" : "ETA " + db::format_duration(*eta);
}

// The first line of an error text (an old database may hold a stack trace).
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (const size_t trace = line.find("Exception raised from "); trace != std::string::npos) line.resize(trace);
  return line;
}

// ---- the context of one request ------------------------------------------------------

struct Context {
  const SiteOptions& options;
  db::ResultsDb db;
  double now;
  PageOptions page_options(const std::string& title, bool live) const {
    PageOptions p;
    p.title = title;
    p.db_path = options.db_path;
    if (live && options.refresh_s > 0) p.refresh_s = options.refresh_s;
    p.generated_at = db::format_utc(now) + " UTC";
    return p;
  }
};

// What `egm status` says of a sweep: its progress, with a stale sweep's
// running cells counted as interrupted and no ETA.
struct SweepState {
  db::SweepProgress progress;
  std::optional<double> stale;
  std::string status;  // the sweep's status, or "stale"
  db::SweepStatus sweep_status = db::SweepStatus::pending;
  double fraction = 1;
  int64_t steps_to_run = 0;
  bool live() const { return !stale && sweep_status == db::SweepStatus::running; }
};

SweepState sweep_state(Context& c, const db::SweepRow& sweep) {
  SweepState s;
  s.progress = c.db.sweep_progress(sweep.id);
  s.stale = db::stale_since(sweep, c.now);
  s.sweep_status = sweep.status;
  s.status = s.stale ? "stale" : db::to_string(sweep.status);
  if (s.stale) {
    s.progress.interrupted += s.progress.running;
    s.progress.running = 0;
    s.progress.eta_s.reset();
  }
  s.steps_to_run = s.progress.steps_total - s.progress.steps_given_up;
  s.fraction = s.steps_to_run > 0 ? static_cast<double>(s.progress.steps_done) / static_cast<double>(s.steps_to_run)
                                   : 1.0;
  return s;
}

db::SweepRow require_sweep(Context& c, const std::string& name) {
  std::optional<db::SweepRow> s = c.db.find_sweep(name);
  if (!s) {
    std::vector<std::string> names;
    for (const auto& r : c.db.list_sweeps(true)) names.push_back(r.name);
    fail(404, fmt::format("no sweep named '{}' in this database{}{}", name, names.empty() ? " (it has none)" : "; sweeps: ",
                          fmt::join(names, ", ")));
  }
  return *s;
}

// ---- the sweeps list ---------------------------------------------------------------------

db::Table sweeps_table(Context& c, const std::vector<db::SweepRow>& sweeps, std::vector<SweepState>& states) {
  db::Table t;
  t.columns = {"sweep",    "status",   "cells",       "done",         "running",       "pending",      "failed",
               "interrupted", "steps_done", "steps_to_run", "progress", "eta_s", "created_utc", "updated_utc",
               "heartbeat_utc", "slurm_job_id"};
  for (const auto& s : sweeps) {
    states.push_back(sweep_state(c, s));
    const SweepState& st = states.back();
    const db::SweepProgress& p = st.progress;
    t.rows.push_back({s.name, st.status, p.total, p.done, p.running, p.pending, p.failed, p.interrupted, p.steps_done,
                      st.steps_to_run, st.fraction, opt(p.eta_s), db::format_utc(s.created_at),
                      db::format_utc(s.updated_at),
                      s.heartbeat_at ? db::Value(db::format_utc(*s.heartbeat_at)) : db::Value(),
                      opt(s.slurm_job_id)});
  }
  return t;
}

Response sweeps_page(Context& c, const Params& params, std::optional<db::Format> format) {
  bool all = false;
  if (auto it = params.find("all"); it != params.end()) {
    if (it->second != "0" && it->second != "1") fail(400, "parameter 'all' takes 0 or 1");
    all = it->second == "1";
  }
  const std::vector<db::SweepRow> sweeps = c.db.list_sweeps(all);
  std::vector<SweepState> states;
  const db::Table table = sweeps_table(c, sweeps, states);
  if (format) return download(table, *format, "sweeps");
  bool live = false;
  std::string body = "<h1>Sweeps</h1>\n";
  if (sweeps.empty()) {
    body += "<p class=\"note\">no sweeps in this database yet</p>\n";
  } else {
    body += fmt::format("<div class=\"downloads\">download: <a href=\"/sweeps.csv{0}\">CSV</a><a "
                        "href=\"/sweeps.json{0}\">JSON</a></div>\n",
                        all ? "?all=1" : "");
    body += "<table id=\"sweeps\"><thead><tr><th>sweep</th><th>status</th><th>progress</th><th>cells</th><th>done</th>"
            "<th>running</th><th>pending</th><th>failed</th><th>interrupted</th><th>ETA</th><th>created (UTC)</th>"
            "<th>last heartbeat (UTC)</th><th>slurm job</th></tr></thead><tbody>\n";
    for (size_t i = 0; i < sweeps.size(); ++i) {
      const db::SweepRow& s = sweeps[i];
      const SweepState& st = states[i];
      const db::SweepProgress& p = st.progress;
      live = live || st.live();
      body += fmt::format(
          "<tr data-sweep=\"{0}\"><td><a href=\"/sweep/{1}\">{0}</a></td><td>{2}</td><td class=\"progress\" "
          "data-progress=\"{3:.6f}\">{4}</td><td class=\"num\">{5}</td><td class=\"num\">{6}</td><td "
          "class=\"num\">{7}</td><td class=\"num\">{8}</td><td class=\"num\">{9}</td><td class=\"num\">{10}</td>"
          "<td>{11}</td><td>{12}</td><td>{13}</td><td>{14}</td></tr>\n",
          escape(s.name), escape(url_encode(s.name)), status_span(st.status), st.fraction, progress_bar(st.fraction),
          p.total, p.done, p.running, p.pending, p.failed, p.interrupted,
          st.stale ? "stale: coordinator gone" : escape(eta_text(p.eta_s)), escape(db::format_utc(s.created_at)),
          s.heartbeat_at ? escape(db::format_utc(*s.heartbeat_at)) : "",
          s.slurm_job_id ? escape(*s.slurm_job_id) : "");
    }
    body += "</tbody></table>\n";
  }
  body += all ? "<p class=\"note\"><a href=\"/\">hide superseded sweeps</a></p>\n"
              : "<p class=\"note\"><a href=\"/?all=1\">also show sweeps superseded by --new-sweep</a></p>\n";
  Response r;
  r.body = page(c.page_options("sweeps", live), body);
  return r;
}

// ---- plots ---------------------------------------------------------------------------------

std::string plot_val_curves(const std::vector<analysis::VariantCurve>& curves) {
  SvgPlot plot("val loss per variant: mean over seeds, min..max band", "step", "val loss (nats)");
  for (size_t v = 0; v < curves.size(); ++v) {
    std::vector<double> xs, mean, lo, hi;
    for (const auto& p : curves[v].second) {
      xs.push_back(static_cast<double>(p.step));
      mean.push_back(p.mean);
      lo.push_back(p.min);
      hi.push_back(p.max);
    }
    plot.band(xs, lo, hi, palette(v));
    size_t n = 0;
    for (const auto& p : curves[v].second) n = std::max(n, p.n);
    plot.line(xs, mean, palette(v), fmt::format("{} ({} seed{})", curves[v].first, n, n == 1 ? "" : "s"));
  }
  return plot.render("plot-val-curves");
}

std::string plot_omega_sigma(const std::vector<analysis::MopeRun>& runs, const std::string& id) {
  SvgPlot plot("MoPE (sigma, omega): learned vs initial", "sigma (envelope width, characters)",
               "omega (radians per character)");
  plot.log_x().log_y();
  double lo = 0.5, hi = 100;
  std::vector<double> s0, o0;
  std::vector<std::string> variants;
  for (const auto& r : runs) {
    if (std::find(variants.begin(), variants.end(), r.variant) == variants.end()) variants.push_back(r.variant);
    for (const auto& p : r.pairs) {
      if (p.has_init) {
        s0.push_back(p.sigma0);
        o0.push_back(p.omega0);
      }
      if (std::isfinite(p.sigma) && p.sigma > 0) lo = std::min(lo, p.sigma / 1.5), hi = std::max(hi, p.sigma * 1.5);
    }
  }
  plot.include_x(lo, hi);
  for (double b : {1.0, 6.0, 20.0, 55.0}) plot.vline(b, "#c3cad6", "");
  std::vector<double> bx, by;
  for (int i = 0; i <= 60; ++i) {
    const double x = lo * std::pow(hi / lo, i / 60.0);
    bx.push_back(x);
    by.push_back(5.0 / x);
  }
  plot.line(bx, by, "#1d2330", "omega*sigma = 5 (boundary)");
  plot.hline(0.95 * M_PI, "#7f7f7f", "omega = 0.95 pi (clamp)");
  if (!s0.empty()) plot.points(s0, o0, "#9aa4b5", "initial pairs", /*hollow=*/true);
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> xs, ys;
    size_t n = 0;
    for (const auto& r : runs) {
      if (r.variant != variants[v]) continue;
      ++n;
      for (const auto& p : r.pairs) {
        xs.push_back(p.sigma);
        ys.push_back(p.omega);
      }
    }
    plot.points(xs, ys, palette(v), fmt::format("learned: {} ({} run{})", variants[v], n, n == 1 ? "" : "s"));
  }
  return plot.render(id);
}

std::string plot_interaction(const analysis::SweepAnalysis& a) {
  const analysis::InteractionAnalysis& ia = *a.interaction;
  const analysis::Factors& f = ia.factors;
  const stats::InteractionResult& r = ia.result;
  const double nan = std::nan("");
  std::map<std::string, double> pub;
  if (a.published && a.published->metric == ia.metric)
    for (const auto& row : a.published->rows) pub[row.variant] = row.published;
  auto published_delta = [&](const std::string& v) {
    return pub.count(f.base) && pub.count(v) ? pub[f.base] - pub[v] : nan;
  };
  auto delta_ci = [&](const std::string& v, bool high) {
    const analysis::DeltaResult* d = a.baseline == f.base ? a.find_delta(v) : nullptr;
    return d && d->delta.has_interval ? (high ? d->delta.ci_high : d->delta.ci_low) : nan;
  };
  struct Row {
    std::string label;
    double est, lo, hi, published;
  };
  const std::vector<Row> rows{
      {"delta(" + f.a + ")", r.delta_a, delta_ci(f.a, false), delta_ci(f.a, true), published_delta(f.a)},
      {"delta(" + f.b + ")", r.delta_b, delta_ci(f.b, false), delta_ci(f.b, true), published_delta(f.b)},
      {"sum of parts", ia.sum_of_parts.estimate, ia.sum_of_parts.has_interval ? ia.sum_of_parts.ci_low : nan,
       ia.sum_of_parts.has_interval ? ia.sum_of_parts.ci_high : nan, published_delta(f.a) + published_delta(f.b)},
      {"delta(" + f.ab + ")", r.delta_ab, delta_ci(f.ab, false), delta_ci(f.ab, true), published_delta(f.ab)},
      {"interaction I", r.estimate, r.interval.has_interval ? r.interval.ci_low : nan,
       r.interval.has_interval ? r.interval.ci_high : nan,
       a.published && a.published->published_interaction ? *a.published->published_interaction : nan}};
  SvgPlot plot(fmt::format("deltas and the interaction with {:g}% t intervals", a.level * 100), "",
               "val loss difference (nats), + = better than " + f.base);
  std::vector<std::string> labels;
  std::vector<double> px, py;
  for (size_t i = 0; i < rows.size(); ++i) {
    labels.push_back(rows[i].label);
    plot.interval(static_cast<double>(i), rows[i].est, rows[i].lo, rows[i].hi, i == 4 ? "#d62728" : "#1f77b4");
    px.push_back(static_cast<double>(i) + 0.18);
    py.push_back(rows[i].published);
  }
  if (r.has_bootstrap) plot.interval(4, r.estimate, r.bootstrap.low, r.bootstrap.high, "#ff7f0e", -0.18);
  plot.categories(labels);
  plot.hline(0, "#1d2330", "zero", /*dashed=*/false);
  if (std::any_of(py.begin(), py.end(), [](double v) { return std::isfinite(v); }))
    plot.points(px, py, "#2ca02c", "published (paper)", false, "diamond");
  if (r.has_bootstrap) plot.line({}, {}, "#ff7f0e", "bootstrap interval of I");
  return plot.render("plot-interaction");
}

// ---- one sweep ---------------------------------------------------------------------------

// Grid points (schema 3 adds cells.grid_point/grid_json): cell id -> point, and
// each point's label. Empty for a sweep without a grid or an older database.
struct GridInfo {
  std::map<int64_t, int64_t> point_of;       // cell id -> point
  std::map<int64_t, std::string> label;      // point -> "train.lr=0.001 ..."
};

// Labels name the axes in the spec's order (as egm analyze does), then any
// other key a point carries.
GridInfo grid_info(Context& c, const db::SweepRow& sweep) {
  const int64_t sweep_id = sweep.id;
  std::vector<std::string> axes;
  try {
    axes = analysis::read_spec_view(sweep.spec_json).grid_axes;
  } catch (const Error&) {
    // an unreadable stored spec: the points' own key order
  }
  GridInfo g;
  bool has_column = false;
  {
    db::Statement s = c.db.connection().prepare("SELECT name FROM pragma_table_info('cells')");
    while (s.step()) has_column = has_column || s.text(0) == "grid_point";
  }
  if (!has_column) return g;
  db::Statement s = c.db.connection().prepare(
      "SELECT id, grid_point, grid_json FROM cells WHERE sweep_id = ? AND grid_point IS NOT NULL ORDER BY position");
  s.bind(1, sweep_id);
  while (s.step()) {
    const int64_t point = s.int64(1);
    g.point_of[s.int64(0)] = point;
    if (g.label.count(point)) continue;
    std::string label;
    try {
      const nlohmann::json j = parse_json(s.opt_text(2).value_or("{}"), JsonLimits::user(), "cells.grid_json");
      std::vector<std::string> keys;
      for (const auto& a : axes)
        if (j.contains(a)) keys.push_back(a);
      for (const auto& [k, v] : j.items())
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      for (const auto& k : keys) {
        const nlohmann::json& v = j.at(k);
        label += (label.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
      }
    } catch (const Error&) {
      label = "(unreadable grid_json)";
    }
    g.label[point] = label.empty() ? fmt::format("point {}", point) : label;
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
  t.columns = {"key", "variant", "seed", "status", "attempts", "failures", "max_attempts", "latest_step", "max_steps",
               "final_val", "best_val", "full_val", "ar_val", "ar_ref_val", "last_error"};
  if (!g.point_of.empty()) t.columns.insert(t.columns.begin() + 3, "grid_point");
  for (const auto& cell : data.cells) {
    const db::CellRow& r = cell.row;
    std::vector<db::Value> row{r.key, r.variant, r.seed, db::to_string(r.status), int64_t{r.attempts},
                               int64_t{r.failures}, int64_t{r.max_attempts}, opt(r.latest_step), r.max_steps,
                               opt(r.results.final_val), opt(r.results.best_val), opt(r.results.full_val),
                               opt(r.results.ar_val), opt(r.results.ar_ref_val),
                               r.last_error ? db::Value(first_line(*r.last_error)) : db::Value()};
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

const char* const kSweepTables[] = {"paper",     "summary",   "per_seed",  "deltas",     "interaction",
                                    "published", "excluded",  "conflicts", "mope_runs",  "mope_pairs",
                                    "gates",     "gates_by_layer", "cells", "running", "grid", "grid_across",
                                    nullptr};

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
  if (name == "mope_runs") return analysis::mope_run_table(a);
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

// The analysis sections of a sweep (or of one grid point): the headline, the
// paper's table, plots and every table, with download links under `base`
// and `suffix` (the query string that selects the same point and metric).
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
  if (a.interaction || !a.variants.empty())
    body += "<pre id=\"main-table\">" + escape(analysis::render_main_table(a)) + "</pre>\n";
  auto table_section = [&](const std::string& name, const std::string& heading, const db::Table& t) {
    if (t.rows.empty() && name != "paper") return;
    if (!heading.empty()) body += "<h2>" + escape(heading) + "</h2>\n";
    TableOptions o;
    o.id = "table-" + name;
    o.links = base + "/" + name;
    o.links_query = suffix;  // the download keeps the point and metric
    body += html_table(t, o);
  };
  table_section("paper", "", analysis::paper_table(a));
  body += "<h2>Plots</h2>\n<div class=\"plots\">\n";
  body += plot_val_curves(analysis::val_curve_bands(data));
  if (!a.params.mope.empty()) body += plot_omega_sigma(a.params.mope, "plot-omega-sigma");
  if (a.interaction) body += plot_interaction(a);
  body += "</div>\n";
  table_section("deltas", "Deltas against the baseline", analysis::delta_table(a));
  table_section("interaction", "The 2x2 interaction", analysis::interaction_table(a));
  table_section("published", "Published values", analysis::published_table(a));
  table_section("summary", "Per variant and metric", analysis::summary_table(a));
  table_section("per_seed", "Per seed", analysis::per_seed_table(a));
  table_section("excluded", "Cells left out", analysis::excluded_table(a));
  table_section("conflicts", "Setup conflicts", analysis::setup_conflict_table(a));
  table_section("mope_runs", "MoPE: learned (omega, sigma) per run", analysis::mope_run_table(a));
  table_section("gates_by_layer", "Gate parameters per layer (over heads)", analysis::gate_layer_table(a));
  if (!a.notes.empty()) {
    body += "<h2>Notes</h2>\n<ul class=\"note\">\n";
    for (const auto& n : a.notes) body += "<li>" + escape(n) + "</li>\n";
    body += "</ul>\n";
  }
  return body;
}

Response sweep_page(Context& c, const std::string& name, const std::string& table_segment, const Params& params) {
  const db::SweepRow sweep = require_sweep(c, name);
  const analysis::AnalysisOptions options = analysis_options(params);
  const GridInfo grid = grid_info(c, sweep);
  const std::optional<int64_t> point = point_param(params, grid);
  const std::string base = "/sweep/" + url_encode(name);
  std::string suffix;
  for (const auto& [k, v] : params) suffix += (suffix.empty() ? "?" : "&") + url_encode(k) + "=" + url_encode(v);

  const analysis::SweepData all = analysis::load_sweep(c.db, name);
  const analysis::SweepData data = point ? only_point(all, grid, *point) : all;
  // With a grid and no point chosen, each point is analysed on its own: cells
  // of different points are different configurations and never pair.
  const bool per_point = !grid.label.empty() && !point;
  auto analyse = [&](const analysis::SweepData& d) {
    try {
      return analysis::analyze_sweep(d, options);
    } catch (const Error& e) {
      fail(400, fmt::format("sweep '{}' cannot be analysed: {}", name, e.what()));
    }
  };

  if (!table_segment.empty()) {
    const auto dl = download_name(table_segment);
    const std::string table = dl ? dl->first : table_segment;
    bool known = false;
    for (const char* const* t = kSweepTables; *t; ++t) known = known || table == *t;
    if (!dl || !known)
      fail(404, fmt::format("no table '{}' for sweep '{}'; tables: {}.csv or .json", table_segment, name,
                            fmt::join(table_names(), ", ")));
    const std::string filename = name + (point ? fmt::format("-point{}", *point) : "") + "-" + table;
    if (table == "cells") return download(cells_table(data, grid), dl->second, filename);
    if (table == "running") return download(running_table(sweep_state(c, sweep)), dl->second, filename);
    if (table == "grid") {
      db::Table t;
      t.columns = {"grid_point", "label"};
      for (const auto& [p, label] : grid.label) t.rows.push_back({p, label});
      return download(t, dl->second, filename);
    }
    if (table == "grid_across") {
      if (grid.label.empty()) fail(404, fmt::format("sweep '{}' has no grid points", name));
      try {
        return download(analysis::grid_across_table(analysis::analyze_grid(all, options)), dl->second, filename);
      } catch (const Error& e) {
        fail(400, fmt::format("sweep '{}' cannot be analysed: {}", name, e.what()));
      }
    }
    if (per_point)
      fail(400, fmt::format("sweep '{}' has a grid: choose a point (?point=0..{}) for table '{}'", name,
                            grid.label.rbegin()->first, table));
    return download(analysis_table(table, analyse(data)), dl->second, filename);
  }

  const SweepState st = sweep_state(c, sweep);
  const db::SweepProgress& p = st.progress;
  std::string body = fmt::format("<h1>Sweep {} {}</h1>\n", escape(name), status_span(st.status));
  if (point) body += "<p>grid point " + std::to_string(*point) + ": <strong>" + escape(grid.label.at(*point)) +
                     "</strong> (<a href=\"" + escape(base) + "\">all points</a>)</p>\n";
  if (!data.spec.description.empty()) body += "<p>" + escape(data.spec.description) + "</p>\n";
  body += fmt::format("<p class=\"note\">created {} UTC, spec {}{}</p>\n", escape(db::format_utc(sweep.created_at)),
                      escape(sweep.spec_hash.substr(0, 12)),
                      sweep.slurm_job_id ? ", slurm job " + escape(*sweep.slurm_job_id) : "");
  // The data behind the numbers, and who runs the sweep now (schema v8).
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
    o.links = base + "/running";
    o.link_column = 0;
    o.link_prefix = base + "/cell/";
    body += html_table(running_table(st), o);
  }
  for (const auto& cell : data.cells)
    if (cell.row.status == db::CellStatus::failed)
      body += fmt::format("<p class=\"error\">failed {} (failure {} of {} allowed; {}): {}</p>\n", escape(cell.row.key),
                          cell.row.failures, cell.row.max_attempts,
                          cell.row.failures >= cell.row.max_attempts ? "given up" : "will retry",
                          escape(first_line(cell.row.last_error.value_or("(no error text)"))));

  std::vector<analysis::Claim> claims;
  if (per_point) {
    body += "<h2>Grid points</h2>\n<p class=\"note\">Each point is its own 2x2: cells of different points never "
            "pair. Open a point for its tables and plots.</p>\n";
    analysis::GridAnalysis g;
    try {
      g = analysis::analyze_grid(all, options);
    } catch (const Error& e) {
      fail(400, fmt::format("sweep '{}' cannot be analysed: {}", name, e.what()));
    }
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
                              escape(base), escape(label));
      sections += verdict_html(a);
      if (a.interaction || !a.variants.empty())
        sections += "<pre>" + escape(analysis::render_main_table(a)) + "</pre>\n";
    }
    TableOptions o;
    o.id = "table-grid";
    o.links = base + "/grid";
    body += html_table(t, o);
    body += "<h2 id=\"across\">Across points</h2>\n<p class=\"note\">Does it hold at every point? Each variant's "
            "mean, each delta against the baseline (positive = better) and the interaction (positive = "
            "superadditive), with " + escape(fmt::format("{:.0f}%", 100 * options.level)) +
            " intervals over seeds; the download is the long form, one row per point and quantity.</p>\n";
    TableOptions across;
    across.id = "table-grid-across";
    across.links = base + "/grid_across";
    body += html_table(grid_across_wide(g), across) + sections;
  } else {
    const analysis::SweepAnalysis a = analyse(data);
    claims = analysis::claims_of(a);
    body += analysis_sections(data, a, base, suffix);
  }
  // What the numbers cost (src/analysis/compute.h): the whole sweep, whatever point is shown.
  body += "<h2 id=\"compute\">Compute</h2>\n<pre id=\"compute-statement\">" +
          escape(analysis::render_compute_text(analysis::compute_statement(c.db, name, claims))) + "</pre>\n";
  body += "<h2>Cells</h2>\n";
  {
    TableOptions o;
    o.id = "table-cells";
    o.links = base + "/cells";
    o.link_column = 0;
    o.link_prefix = base + "/cell/";
    o.links_query = suffix;
    body += html_table(cells_table(data, grid), o);
  }
  body += "<details><summary>the spec (JSON)</summary><pre>" + escape(sweep.spec_json) + "</pre></details>\n";
  Response r;
  r.body = page(c.page_options("sweep " + name, st.live()), body);
  return r;
}

// ---- one cell ----------------------------------------------------------------------------

db::Table cell_query(Context& c, const char* sql, int64_t cell_id) {
  db::Statement s = c.db.connection().prepare(sql);
  s.bind(1, cell_id);
  return db::read_rows(s);
}

constexpr const char* kAttemptsSql =
    "SELECT attempt, status, host, device, world_size, backend, datetime(started_at, 'unixepoch') AS started_utc, "
    "datetime(ended_at, 'unixepoch') AS ended_utc, round(coalesce(ended_at, strftime('%s', 'now')) - started_at, 1) "
    "AS seconds, resumed_from_step, torch_version, git_commit, error FROM runs WHERE cell_id = ? ORDER BY attempt";
// events.step came with schema v4; an older file (read-only) shows it empty.
std::string events_sql(int schema_version) {
  return fmt::format(
      "SELECT datetime(e.time, 'unixepoch') AS time_utc, e.kind, r.attempt, {} AS step, e.message FROM events e "
      "LEFT JOIN runs r ON r.id = e.run_id WHERE e.cell_id = ? ORDER BY e.time, e.id",
      schema_version >= 4 ? "e.step" : "NULL");
}
constexpr const char* kMetricsSql =
    "SELECT m.step, m.split, m.loss, m.lr, m.tokens_per_s, r.attempt, m.time FROM metrics m JOIN runs r ON r.id = "
    "m.run_id WHERE m.cell_id = ? ORDER BY m.split, m.step";
constexpr const char* kParamsSql =
    "SELECT p.step, p.module, p.layer, p.idx, p.name, p.value FROM params p WHERE p.cell_id = ? "
    "ORDER BY p.step, p.module, p.layer, p.name, p.idx";
// Learned parameters at step 0 and at the cell's last recorded step, side by side.
constexpr const char* kParamsNowSql =
    "SELECT module, layer, idx, name, "
    "(SELECT value FROM params q WHERE q.cell_id = p.cell_id AND q.module = p.module AND q.layer = p.layer AND "
    "q.idx = p.idx AND q.name = p.name AND q.step = 0) AS at_step_0, value AS learned, step "
    "FROM params p WHERE p.cell_id = ?1 AND p.step = (SELECT max(step) FROM params WHERE cell_id = ?1) "
    "ORDER BY module, layer, name, idx";

Response cell_page(Context& c, const std::string& sweep_name, const std::string& key, const std::string& table_segment) {
  const db::SweepRow sweep = require_sweep(c, sweep_name);
  std::optional<int64_t> cell_id;
  {
    db::Statement s = c.db.connection().prepare("SELECT id FROM cells WHERE sweep_id = ? AND key = ?");
    s.bind_all(sweep.id, key);
    if (s.step()) cell_id = s.int64(0);
  }
  if (!cell_id) fail(404, fmt::format("no cell '{}' in sweep '{}'", key, sweep_name));
  const db::CellRow cell = c.db.cell(*cell_id);
  if (!table_segment.empty()) {
    const auto dl = download_name(table_segment);
    const std::string table = dl ? dl->first : table_segment;
    const std::string events = events_sql(c.db.schema_version());
    const char* sql = table == "attempts" ? kAttemptsSql
                      : table == "events" ? events.c_str()
                      : table == "metrics" ? kMetricsSql
                      : table == "params" ? kParamsSql
                                          : nullptr;
    if (!dl || !sql)
      fail(404, fmt::format("no table '{}' for cell '{}'; tables: attempts, events, metrics, params (.csv or .json)",
                            table_segment, key));
    return download(cell_query(c, sql, *cell_id), dl->second, sweep_name + "-" + key + "-" + table);
  }
  const std::string base = "/sweep/" + url_encode(sweep_name) + "/cell/" + url_encode(key);
  const GridInfo grid = grid_info(c, sweep);
  const bool live = cell.status == db::CellStatus::running && !db::stale_since(sweep, c.now);
  std::string body = fmt::format("<h1>Cell {} {}</h1>\n<p>sweep <a href=\"/sweep/{}\">{}</a>, variant {}, seed {}",
                                 escape(key), status_span(db::to_string(cell.status)), escape(url_encode(sweep_name)),
                                 escape(sweep_name), escape(cell.variant), cell.seed);
  if (auto it = grid.point_of.find(cell.id); it != grid.point_of.end())
    body += fmt::format(", grid point {}: {}", it->second, escape(grid.label.at(it->second)));
  body += fmt::format("; {} attempt{} ({} failed, {} allowed); step {} of {}</p>\n", cell.attempts,
                      cell.attempts == 1 ? "" : "s", cell.failures, cell.max_attempts,
                      cell.latest_step ? std::to_string(*cell.latest_step) : "-", cell.max_steps);
  if (cell.last_error) body += "<p class=\"error\">last error: " + escape(first_line(*cell.last_error)) + "</p>\n";
  {
    db::Table t;
    t.columns = {"final_val", "best_val", "full_val", "ar_val", "ar_ref_val", "final_step"};
    t.rows.push_back({opt(cell.results.final_val), opt(cell.results.best_val), opt(cell.results.full_val),
                      opt(cell.results.ar_val), opt(cell.results.ar_ref_val), opt(cell.final_step)});
    TableOptions o;
    o.id = "table-results";
    o.digits = 6;
    body += "<h2>Results</h2>\n" + html_table(t, o);
  }
  // Loss curves: train (every recorded step), the periodic evals.
  const db::Table metrics = cell_query(c, kMetricsSql, *cell_id);
  {
    SvgPlot plot("loss curves", "step", "loss (nats)");
    size_t colour = 0;
    for (const char* split : {"train", "eval_train", "eval_val"}) {
      std::vector<double> xs, ys;
      for (const auto& row : metrics.rows) {
        if (std::get<std::string>(row[1]) != split) continue;
        xs.push_back(static_cast<double>(std::get<int64_t>(row[0])));
        ys.push_back(std::holds_alternative<double>(row[2]) ? std::get<double>(row[2]) : std::nan(""));
      }
      if (!xs.empty()) plot.line(xs, ys, palette(colour), split, std::string(split) == "eval_train");
      ++colour;
    }
    body += "<h2>Loss curves</h2>\n<div class=\"plots\">" + plot.render("plot-loss") + "</div>\n";
  }
  const db::Table learned = cell_query(c, kParamsNowSql, *cell_id);
  if (!learned.rows.empty()) {
    // The MoPE pairs of this cell in the omega-sigma plane.
    std::map<int64_t, analysis::MopePair> pairs;
    for (const auto& row : learned.rows) {
      if (std::get<std::string>(row[0]) != "mope") continue;
      auto& pr = pairs[std::get<int64_t>(row[2])];
      const std::string& n = std::get<std::string>(row[3]);
      const double at0 = std::holds_alternative<double>(row[4]) ? std::get<double>(row[4]) : std::nan("");
      const double now = std::holds_alternative<double>(row[5]) ? std::get<double>(row[5]) : std::nan("");
      if (n == "omega") pr.omega = now, pr.omega0 = at0;
      if (n == "sigma") pr.sigma = now, pr.sigma0 = at0;
      pr.has_init = std::isfinite(pr.omega0) && std::isfinite(pr.sigma0) && pr.omega0 > 0;
    }
    body += "<h2>Learned parameters</h2>\n";
    if (!pairs.empty()) {
      analysis::MopeRun run;
      run.variant = cell.variant;
      run.key = key;
      for (auto& [idx, pr] : pairs) {
        pr.idx = idx;
        run.pairs.push_back(pr);
      }
      body += "<div class=\"plots\">" + plot_omega_sigma({run}, "plot-omega-sigma") + "</div>\n";
    }
    TableOptions o;
    o.id = "table-params";
    o.links = base + "/params";
    o.digits = 6;
    body += html_table(learned, o);
  }
  {
    TableOptions o;
    o.id = "table-attempts";
    o.links = base + "/attempts";
    body += "<h2>Attempts</h2>\n" + html_table(cell_query(c, kAttemptsSql, *cell_id), o);
    o.id = "table-events";
    o.links = base + "/events";
    body += "<h2>Events</h2>\n" + html_table(cell_query(c, events_sql(c.db.schema_version()).c_str(), *cell_id), o);
  }
  body += fmt::format("<p class=\"downloads\">every metric point ({}): <a href=\"{}/metrics.csv\">CSV</a><a "
                      "href=\"{}/metrics.json\">JSON</a></p>\n",
                      metrics.rows.size(), escape(base), escape(base));
  body += "<details><summary>the run config (JSON)</summary><pre>" + escape(cell.config_json) + "</pre></details>\n";
  Response r;
  r.body = page(c.page_options("cell " + key, live), body);
  return r;
}

// ---- the SQL box -------------------------------------------------------------------------

constexpr double kQuerySeconds = 10;  // a statement still running after this is stopped
constexpr size_t kHtmlRows = 1000;    // rows shown on the page (downloads have all)

int stop_after_deadline(void* deadline) {
  return std::chrono::steady_clock::now() > *static_cast<std::chrono::steady_clock::time_point*>(deadline) ? 1 : 0;
}

db::Table run_query(const SiteOptions& o, const std::string& sql) {
  db::Connection connection(o.db_path, db::OpenMode::read_only);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(kQuerySeconds));
  sqlite3_progress_handler(connection.handle(), 10000, stop_after_deadline, &deadline);
  try {
    db::Statement statement = db::prepare_read_only_query(connection, sql);
    db::Transaction snapshot(connection, db::Transaction::Kind::deferred);
    return db::read_rows(statement);
  } catch (const ConfigError& e) {
    fail(403, e.what());  // it would write
  } catch (const DbError& e) {
    if (std::chrono::steady_clock::now() > deadline)
      fail(400, fmt::format("the query ran longer than {:g} s and was stopped", kQuerySeconds));
    fail(400, e.what());
  }
}

Response query_page(Context& c, const Params& params, std::optional<db::Format> format) {
  auto it = params.find("sql");
  const std::string sql = it == params.end() ? "" : it->second;
  if (format) {
    if (sql.empty()) fail(400, "give the statement as ?sql=...");
    return download(run_query(c.options, sql), *format, "query");
  }
  std::string body = "<h1>Read-only SQL</h1>\n<p class=\"note\">One statement that cannot write (the gate of "
                     "<code>egm query</code>). Tables: sweeps, cells, runs, metrics, params, events; times are UNIX "
                     "seconds: <code>datetime(started_at, 'unixepoch')</code>.</p>\n";
  body += "<form method=\"get\" action=\"/query\"><textarea name=\"sql\" id=\"sql\" rows=\"5\">" +
          escape(sql.empty() ? "SELECT variant, count(*) AS cells, avg(final_val) FROM cells GROUP BY variant" : sql) +
          "</textarea><br><button type=\"submit\">Run</button></form>\n";
  Response r;
  if (!sql.empty()) {
    try {
      db::Table t = run_query(c.options, sql);
      const size_t total = t.rows.size();
      if (t.rows.size() > kHtmlRows) t.rows.resize(kHtmlRows);
      TableOptions o;
      o.id = "query-result";
      o.links = "/query";
      o.links_query = "?sql=" + url_encode(sql);
      const std::string html = html_table(t, o);
      if (total > kHtmlRows) body += fmt::format("<p class=\"note\">showing {} of {} rows</p>\n", kHtmlRows, total);
      body += html;
    } catch (const HttpError& e) {
      r.status = e.status;
      body += "<p class=\"error\" id=\"error\">" + escape(e.what()) + "</p>\n";
    }
  }
  r.body = page(c.page_options("SQL", false), body);
  return r;
}

Response error_page(const SiteOptions& o, int status, const std::string& message, bool plain) {
  Response r;
  r.status = status;
  if (plain) {
    r.content_type = "text/plain; charset=utf-8";
    r.body = fmt::format("{} {}: {}\n", status, reason(status), message);
    return r;
  }
  PageOptions p;
  p.title = fmt::format("{} {}", status, reason(status));
  p.db_path = o.db_path;
  r.body = page(p, fmt::format("<h1>{} {}</h1>\n<p class=\"error\" id=\"error\">{}</p>\n<p><a href=\"/\">all "
                               "sweeps</a></p>\n",
                               status, reason(status), escape(message)));
  return r;
}

}  // namespace

const char* const* sweep_table_names() { return kSweepTables; }

Response handle_request(const SiteOptions& options, const std::string& method, const std::string& target) {
  const size_t q = target.find('?');
  const std::string path = target.substr(0, q);
  const std::string query = q == std::string::npos ? "" : target.substr(q + 1);
  const bool plain = ends_with(path, ".csv") || ends_with(path, ".json");
  try {
    if (method != "GET" && method != "HEAD")
      fail(405, fmt::format("method {} not allowed: egm serve is read-only and answers GET only", method));
    const std::vector<std::string> parts = split_path(path);
    auto no_params = [&](const std::string& route) { return parse_query(query, {}, route); };
    Context c{options, db::ResultsDb(options.db_path, db::OpenMode::read_only), unix_now()};
    // One read snapshot for the whole page.
    db::Transaction snapshot(c.db.connection(), db::Transaction::Kind::deferred);
    if (parts.empty()) return sweeps_page(c, parse_query(query, {"all"}, "/"), std::nullopt);
    if (parts.size() == 1 && (parts[0] == "sweeps.csv" || parts[0] == "sweeps.json"))
      return sweeps_page(c, parse_query(query, {"all"}, "/" + parts[0]), download_name(parts[0])->second);
    if (parts.size() == 1 && parts[0] == "query") return query_page(c, parse_query(query, {"sql"}, "/query"), std::nullopt);
    if (parts.size() == 1 && (parts[0] == "query.csv" || parts[0] == "query.json"))
      return query_page(c, parse_query(query, {"sql"}, "/" + parts[0]), download_name(parts[0])->second);
    if (parts[0] == "sweep" && (parts.size() == 2 || parts.size() == 3))
      return sweep_page(c, parts[1], parts.size() == 3 ? parts[2] : "",
                        parse_query(query, {"metric", "point"}, "/sweep/NAME"));
    if (parts[0] == "sweep" && parts.size() >= 4 && parts.size() <= 5 && parts[2] == "cell") {
      no_params("/sweep/NAME/cell/KEY");
      return cell_page(c, parts[1], parts[3], parts.size() == 5 ? parts[4] : "");
    }
    fail(404, fmt::format("no page at '{}'; pages: /, /sweep/NAME, /sweep/NAME/cell/KEY, /query", path));
  } catch (const HttpError& e) {
    return error_page(options, e.status, e.what(), plain);
  } catch (const DbError& e) {
    return error_page(options, 500, std::string("database: ") + e.what(), plain);
  } catch (const std::exception& e) {
    return error_page(options, 500, e.what(), plain);
  }
}

}  // namespace egm::serve
