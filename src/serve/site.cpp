// handle_request: the path routed to its page, the query checked, and an
// HttpError or a database error turned into its status and message.
#include "serve/site.h"

#include <fmt/format.h>

#include "serve/pages.h"
#include "util/error.h"

// The router: the target's path to one page (pages.h), its query string
// checked against the parameters that page takes, one read snapshot for the
// whole page, and every error as a page with one line.
namespace egm::serve {

Response handle_request(const SiteOptions& options, const std::string& method, const std::string& target) {
  const size_t q = target.find('?');
  const std::string path = target.substr(0, q);
  const std::string query = q == std::string::npos ? "" : target.substr(q + 1);
  // Decided before anything can fail, so even a routing error reaches a script as plain text.
  const bool plain = ends_with(path, ".csv") || ends_with(path, ".json");
  try {
    if (method != "GET" && method != "HEAD")
      fail(405, fmt::format("method {} not allowed: egm serve is read-only and answers GET only", method));
    const std::vector<std::string> parts = split_path(path);
    auto no_params = [&](const std::string& route) { return parse_query(query, {}, route); };
    // A connection per request, read-only: requests on httplib's threads share no SQLite handle.
    Context c{options, db::ResultsDb(options.db_path, db::OpenMode::read_only), unix_now()};
    // One read snapshot for the whole page.
    db::Transaction snapshot(c.db.connection(), db::Transaction::Kind::deferred);
    if (parts.empty()) return sweeps_page(c, parse_query(query, {"all"}, "/"), std::nullopt);
    if (parts.size() == 1 && (parts[0] == "sweeps.csv" || parts[0] == "sweeps.json"))
      return sweeps_page(c, parse_query(query, {"all"}, "/" + parts[0]), download_name(parts[0])->second);
    if (parts.size() == 1 && parts[0] == "query") return query_page(c, parse_query(query, {"sql"}, "/query"), std::nullopt);
    if (parts.size() == 1 && (parts[0] == "query.csv" || parts[0] == "query.json"))
      return query_page(c, parse_query(query, {"sql"}, "/" + parts[0]), download_name(parts[0])->second);
    // The comma operator: no_params checks the query (no parameters) before the page is built.
    if (parts.size() == 1 && parts[0] == "paper") return paper_page(c, (no_params("/paper"), std::nullopt));
    if (parts.size() == 1 && (parts[0] == "paper.csv" || parts[0] == "paper.json"))
      return paper_page(c, (no_params("/" + parts[0]), download_name(parts[0])->second));
    if (parts[0] == "sweep" && (parts.size() == 2 || parts.size() == 3))
      return sweep_page(c, parts[1], parts.size() == 3 ? parts[2] : "",
                        parse_query(query, {"metric", "point"}, "/sweep/NAME"));
    if (parts[0] == "sweep" && parts.size() >= 4 && parts.size() <= 5 && parts[2] == "cell") {
      no_params("/sweep/NAME/cell/KEY");
      return cell_page(c, parts[1], parts[3], parts.size() == 5 ? parts[4] : "");
    }
    fail(404, fmt::format("no page at '{}'; pages: /, /sweep/NAME, /sweep/NAME/cell/KEY, /query, /paper", path));
  } catch (const HttpError& e) {
    return error_page(options, e.status, e.what(), plain);
  } catch (const DbError& e) {
    return error_page(options, 500, std::string("database: ") + e.what(), plain);
  // Anything else (a bug, std::bad_alloc) still answers with a page rather than dropping the connection.
  } catch (const std::exception& e) {
    return error_page(options, 500, e.what(), plain);
  }
}

}  // namespace egm::serve
