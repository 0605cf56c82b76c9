// A request's pieces: HTTP errors, the query string (known keys only), the
// path's segments, a table's download name and the CSV or JSON answer.
#include "serve/pages.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "analysis/figures.h"
#include "serve/svg.h"
#include "util/unix_time.h"
// The pieces every page shares (pages.h says what each is for).
namespace egm::serve {

// ---- errors and requests ------------------------------------------------------------

void fail(int status, const std::string& message) { throw HttpError(status, message); }

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

Params parse_query(std::string_view qs, const std::vector<std::string>& allowed, const std::string& route) {
  Params params;
  size_t pos = 0;
  while (pos <= qs.size() && !qs.empty()) {
    size_t end = qs.find('&', pos);
    if (end == std::string_view::npos) end = qs.size();
    const std::string_view item = qs.substr(pos, end - pos);
    pos = end + 1;
    // A trailing '&' (some forms send one) is allowed; an empty item inside ("a=1&&b=2") is not.
    if (item.empty()) {
      if (end == qs.size()) break;
      fail(400, "malformed query string: an empty item between '&'s");
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      fail(400, fmt::format("malformed query string: '{}' has no '=' (write key=value)", item));
    // '+' is a space in a query string (form encoding), unlike in a path.
    const auto key = url_decode(item.substr(0, eq), true);
    const auto value = url_decode(item.substr(eq + 1), true);
    if (!key || !value) fail(400, fmt::format("malformed query string: bad %-escape in '{}'", item));
    // An unknown key is refused, so a misspelt parameter never silently does nothing.
    if (std::find(allowed.begin(), allowed.end(), *key) == allowed.end())
      fail(400, fmt::format("unknown parameter '{}' for {}{}{}", *key, route, allowed.empty() ? " (it takes none)" : "; it takes: ",
                            fmt::join(allowed, ", ")));
    // A key given twice is ambiguous: refused rather than taking either value.
    if (!params.emplace(*key, *value).second) fail(400, fmt::format("parameter '{}' given twice", *key));
    if (end == qs.size()) break;
  }
  return params;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  // An absolute-form or '*' target (a proxy's request) names no page here.
  if (path.empty() || path[0] != '/') fail(400, "the request target must start with '/'");
  size_t pos = 1;
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    // Decoded per segment, after splitting: an escaped '/' (%2F) stays inside its segment, as a key may hold one.
    const auto part = url_decode(path.substr(pos, end - pos), false);
    if (!part) fail(400, fmt::format("malformed path: bad %-escape in '{}'", path));
    parts.push_back(*part);
    pos = end + 1;
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // "/x/" is "/x"
  for (const auto& p : parts)
    // "a//b" is refused rather than collapsed: no page has an empty segment.
    if (p.empty()) fail(404, fmt::format("no page at '{}' (an empty path segment)", path));
  return parts;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

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

// A NaN or infinite double becomes NULL: JSON has no literal for either.
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

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  // LibTorch appends its C++ stack to the message ("Exception raised from ..."); the page keeps the message.
  if (const size_t trace = line.find("Exception raised from "); trace != std::string::npos) line.resize(trace);
  return line;
}

// ---- the context of one request ------------------------------------------------------

PageOptions Context::page_options(const std::string& title, bool live) const {
  PageOptions p;
  p.title = title;
  p.db_path = options.db_path;
  // Only a live page reloads, and only with a positive --refresh.
  if (live && options.refresh_s > 0) p.refresh_s = options.refresh_s;
  p.generated_at = db::format_utc(now) + " UTC";
  return p;
}

SweepState sweep_state(Context& c, const db::SweepRow& sweep) {
  SweepState s;
  s.progress = c.db.sweep_progress(sweep.id);
  s.stale = db::stale_since(sweep, c.now);
  s.sweep_status = sweep.status;
  s.status = s.stale ? "stale" : db::to_string(sweep.status);
  if (s.stale) {
    // A stale sweep's running cells are in fact interrupted: no coordinator will finish them.
    s.progress.interrupted += s.progress.running;
    s.progress.running = 0;
    s.progress.eta_s.reset();
  }
  // Steps of cells given up on will not run, so the progress can still reach 100%.
  s.steps_to_run = s.progress.steps_total - s.progress.steps_given_up;
  // Nothing left to run counts as complete (1.0), not 0/0.
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

std::string svg_figure(const analysis::Figure& f) {
  std::string id = "plot-" + f.name;
  std::replace(id.begin(), id.end(), '_', '-');
  return render_svg(f, id);
}

Response error_page(const SiteOptions& o, int status, const std::string& message, bool plain) {
  Response r;
  r.status = status;
  // A .csv or .json request gets its error as plain text, for the script or curl that asked.
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

}  // namespace egm::serve
