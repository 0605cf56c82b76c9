// `/query`: one statement through `egm query`'s gate (db/read_only_query.h)
// on a connection of its own, stopped after 10 s; the first 1000 rows on the
// page, all of them in query.csv|json.
#include "serve/pages.h"

#include <sqlite3.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>

#include "db/read_only_query.h"
#include "db/sqlite.h"
#include "util/error.h"

namespace egm::serve {

namespace {

// ---- the SQL box -------------------------------------------------------------------------

constexpr double kQuerySeconds = 10;  // a statement still running after this is stopped
constexpr size_t kHtmlRows = 1000;    // rows shown on the page (downloads have all)

int stop_after_deadline(void* deadline) {
  // SQLite's progress handler: a nonzero return interrupts the running statement.
  return std::chrono::steady_clock::now() > *static_cast<std::chrono::steady_clock::time_point*>(deadline) ? 1 : 0;
}

db::Table run_query(const SiteOptions& o, const std::string& sql) {
  // A connection of its own, so the progress handler never touches the page's connection.
  db::Connection connection(o.db_path, db::OpenMode::read_only);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(kQuerySeconds));
  // Every 10,000 virtual-machine steps: a clock read that costs little, and a stop soon after the deadline.
  sqlite3_progress_handler(connection.handle(), 10000, stop_after_deadline, &deadline);
  try {
    // The gate throws ConfigError for a statement that could write, before anything runs.
    db::Statement statement = db::prepare_read_only_query(connection, sql);
    db::Transaction snapshot(connection, db::Transaction::Kind::deferred);
    return db::read_rows(statement);
  } catch (const ConfigError& e) {
    fail(403, e.what());  // it would write
  } catch (const DbError& e) {
    // An interrupted statement fails as a DbError; past the deadline that is reported as the time limit.
    if (std::chrono::steady_clock::now() > deadline)
      fail(400, fmt::format("the query ran longer than {:g} s and was stopped", kQuerySeconds));
    fail(400, e.what());
  }
}

}  // namespace

Response query_page(Context& c, const Params& params, std::optional<db::Format> format) {
  auto it = params.find("sql");
  const std::string sql = it == params.end() ? "" : it->second;
  if (format) {
    // A download needs the statement itself; the HTML page shows an example instead.
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
      // The page shows the first kHtmlRows; the download links run the statement again for every row.
      if (t.rows.size() > kHtmlRows) t.rows.resize(kHtmlRows);
      TableOptions o;
      o.id = "query-result";
      o.links = "/query";
      o.links_query = "?sql=" + url_encode(sql);
      const std::string html = html_table(t, o);
      if (total > kHtmlRows) body += fmt::format("<p class=\"note\">showing {} of {} rows</p>\n", kHtmlRows, total);
      body += html;
    // A refused or failed statement is reported under the box, which keeps what was typed.
    } catch (const HttpError& e) {
      r.status = e.status;
      body += "<p class=\"error\" id=\"error\">" + escape(e.what()) + "</p>\n";
    }
  }
  r.body = page(c.page_options("SQL", false), body);
  return r;
}

}  // namespace egm::serve
