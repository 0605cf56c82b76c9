// HTML building blocks of the pages: escaping, URL encoding, the page frame
// (header, navigation, footer, a meta refresh for live pages) and tables from
// db::Table with CSV/JSON download links. Everything a page shows from the
// database goes through escape(): sweep names, errors and SQL are user text.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "db/table_format.h"

namespace egm::serve {

// & < > " ' as entities.
std::string escape(std::string_view text);
// Percent-encodes everything but unreserved characters (A-Z a-z 0-9 - . _ ~):
// for path segments and query values in links.
std::string url_encode(std::string_view text);
// Decodes %XX and '+' (as a space, in query values); nullopt for a malformed
// escape (a '%' not followed by two hex digits).
std::optional<std::string> url_decode(std::string_view text, bool plus_as_space);

// The Content-Disposition header of a download named `filename` (a sweep's
// name comes from the database: quotes, ';', control bytes, '/' or non-ASCII
// must not reach the header as they are): "attachment; filename=\"SAFE\";
// filename*=UTF-8''ENCODED" (RFC 6266), SAFE the name in plain ASCII letters,
// digits, '.', '_' and '-' (anything else as '_'; at most 120 bytes).
std::string content_disposition(std::string_view filename);

struct PageOptions {
  std::string title;
  std::string db_path;                // shown in the header
  std::optional<int> refresh_s;       // meta refresh: the page reloads itself (live sweeps)
  std::string generated_at;           // "2026-12-01 23:59:01 UTC"
};
// A complete HTML document around `body`.
std::string page(const PageOptions& options, const std::string& body);

// A table: numbers right-aligned, reals with `digits` significant digits,
// NULL as an empty cell. `id` goes on the <table>; `links` (when not empty)
// adds "CSV · JSON" download links to `links + ".csv"` / `links + ".json"`
// above it. `link_column` >= 0 turns that column's text into a link to
// `link_prefix + url_encode(text)`.
struct TableOptions {
  std::string id;
  std::string caption;
  std::string links;        // download base URL (already encoded), e.g. "/sweep/tiny/cells"
  std::string links_query;  // appended to both links (already encoded), e.g. "?point=1"
  int digits = 5;           // significant digits of floating-point cells
  std::string null_text;    // what a NULL cell shows ("-" on the analysis tables, as in the Markdown report)
  int link_column = -1;
  std::string link_prefix;
};
std::string html_table(const db::Table& table, const TableOptions& options);

// A progress bar: <div class="bar"> with the filled share, and the percentage.
std::string progress_bar(double fraction);

}  // namespace egm::serve
