// The pages of `egm serve` as a pure function of a request: method and raw
// target ("/sweep/tiny_2x2?metric=best_val") in, status + content type + body
// out. No sockets here (server.h adds them), so every route and every refusal
// is testable directly. Each request opens the database read-only
// (SQLITE_OPEN_READONLY, PRAGMA query_only) and reads inside one deferred
// transaction: one consistent snapshot, held only while the page is built.
//
// Routes (GET and HEAD only; README.md in this folder says what each shows):
//   /                                  sweeps: status, progress, ETA, stale    (?all=1: superseded too)
//   /sweeps.csv|json
//   /sweep/NAME                        one sweep                               (?metric=, ?point=)
//   /sweep/NAME/TABLE.csv|json         its tables (paper, summary, deltas, ...)
//   /sweep/NAME/cell/KEY               one cell
//   /sweep/NAME/cell/KEY/TABLE.csv|json  attempts, events, metrics, params
//   /query                             the read-only SQL box                   (?sql=)
//   /query.csv|json?sql=
//   /paper                             the paper's scorecard (egm paper)
//   /paper.csv|json
// Anything else is a 4xx HTML page (or plain text for .csv/.json targets)
// with a one-line message: 400 malformed query string / bad parameter /
// writing SQL, 404 unknown path, sweep, cell or table, 405 another method.
#pragma once

#include <string>

namespace egm::serve {

struct SiteOptions {
  std::string db_path;
  int refresh_s = 5;  // meta refresh of the pages of a live (running, not stale) sweep; 0: never
};

struct Response {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  std::string filename;  // downloads: Content-Disposition attachment name
};

Response handle_request(const SiteOptions& options, const std::string& method, const std::string& target);

// The names of the sweep tables served as /sweep/NAME/TABLE.csv|json.
const char* const* sweep_table_names();

}  // namespace egm::serve
