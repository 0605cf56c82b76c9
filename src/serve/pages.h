// Internal to src/serve: what the pages share, and the pages. site.cpp parses
// the request target and routes it to one page function; each page is a file:
//   page_sweeps.cpp  /                     every sweep, its progress, ETA, staleness
//   page_sweep.cpp   /sweep/NAME           one sweep: progress, the analysis, figures, cells
//   page_cell.cpp    /sweep/NAME/cell/KEY  one cell: results, curves, parameters, attempts
//   page_query.cpp   /query                the read-only SQL box
//   page_paper.cpp   /paper                the paper's scorecard (egm paper)
// request.cpp holds the shared pieces below: the request's context (one
// read-only snapshot of the database), its errors (an HttpError becomes a
// 4xx page with one line), its query parameters and downloads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db/results_db.h"
#include "db/table_format.h"
#include "serve/html.h"
#include "serve/site.h"
#include "util/unix_time.h"

namespace egm {
namespace analysis {
struct Figure;
}
}  // namespace egm

namespace egm::serve {

// ---- errors and requests --------------------------------------------------------------

struct HttpError : std::runtime_error {
  int status;
  HttpError(int s, const std::string& message) : std::runtime_error(message), status(s) {}
};
[[noreturn]] void fail(int status, const std::string& message);
const char* reason(int status);

using Params = std::map<std::string, std::string>;
// Strict: every item "key=value" with well-formed escapes, each key once, and
// only the keys this route knows (400 otherwise).
Params parse_query(std::string_view qs, const std::vector<std::string>& allowed, const std::string& route);
// "/a/b%20c" -> {"a", "b c"}; 400 for a bad escape, 404 for an empty segment.
std::vector<std::string> split_path(std::string_view path);
bool ends_with(const std::string& s, const std::string& suffix);
// "name.csv" -> {"name", csv}; no extension -> nullopt.
std::optional<std::pair<std::string, db::Format>> download_name(const std::string& segment);
Response download(const db::Table& table, db::Format format, const std::string& filename);
Response error_page(const SiteOptions& o, int status, const std::string& message, bool plain);

db::Value opt(const std::optional<double>& v);
db::Value opt(const std::optional<int64_t>& v);
db::Value opt(const std::optional<std::string>& v);
std::string status_span(const std::string& status);
std::string eta_text(const std::optional<double>& eta);
// The first line of an error text (an old database may hold a stack trace).
std::string first_line(const std::string& text);

// A figure as the page's inline SVG, its element id "plot-NAME" (underscores
// as dashes: plot-val-curves, plot-omega-sigma, plot-interaction).
std::string svg_figure(const analysis::Figure& figure);

// ---- the context of one request --------------------------------------------------------

struct Context {
  const SiteOptions& options;
  db::ResultsDb db;
  double now;
  PageOptions page_options(const std::string& title, bool live) const;
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
SweepState sweep_state(Context& c, const db::SweepRow& sweep);
// The sweep, or 404 naming the sweeps there are.
db::SweepRow require_sweep(Context& c, const std::string& name);

// ---- the pages -------------------------------------------------------------------------

Response sweeps_page(Context& c, const Params& params, std::optional<db::Format> format);
Response sweep_page(Context& c, const std::string& name, const std::string& table_segment, const Params& params);
Response cell_page(Context& c, const std::string& sweep_name, const std::string& key,
                   const std::string& table_segment);
Response query_page(Context& c, const Params& params, std::optional<db::Format> format);
Response paper_page(Context& c, std::optional<db::Format> format);

}  // namespace egm::serve
