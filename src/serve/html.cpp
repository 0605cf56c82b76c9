// The HTML pieces: escaping and URL coding, the page frame with its navigation
// and refresh, tables with their download links, and the progress bar.
#include "serve/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <variant>

namespace egm::serve {

// The five characters HTML gives a meaning to, escaped alike in text and in quoted attributes.
std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Two names: a plain one for old clients (unsafe bytes as '_', at most 120) and RFC 8187's exact UTF-8 one.
std::string content_disposition(std::string_view filename) {
  std::string safe, encoded;
  for (char ch : filename.substr(0, 120)) {
    const auto c = static_cast<unsigned char>(ch);
    // Letters, digits and . _ - only: safe in the quoted header value and as a file name on any system.
    safe += std::isalnum(c) || ch == '.' || ch == '_' || ch == '-' ? ch : '_';
  }
  // A leading '.' would save a hidden file, and an empty name gives the browser nothing to use.
  if (safe.empty() || safe[0] == '.') safe.insert(0, "download");
  // RFC 8187's attr-char stays as it is; every other byte is %XX.
  for (char ch : filename) {
    const auto c = static_cast<unsigned char>(ch);
    // strchr would also match the string's terminating NUL, so a NUL byte is ruled out first.
    if (std::isalnum(c) || (ch != '\0' && std::strchr("!#$&+-.^_`|~", ch) != nullptr))
      encoded += ch;
    else
      encoded += fmt::format("%{:02X}", c);
  }
  return fmt::format("attachment; filename=\"{}\"; filename*=UTF-8''{}", safe, encoded);
}

// RFC 3986's unreserved characters as they are, every other byte %XX: a sweep or cell
// name stays one path segment.
std::string url_encode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

// nullopt for a broken escape (the request is refused, not guessed at); '+' is a space only in a query.
std::optional<std::string> url_decode(std::string_view text, bool plus_as_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      // '%' needs two hex digits after it; a truncated escape is refused, not passed through.
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string page(const PageOptions& o, const std::string& body) {
  std::string head = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  head += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  // A running sweep's pages reload by meta refresh: the server needs no JavaScript and no push.
  if (o.refresh_s) head += fmt::format("<meta http-equiv=\"refresh\" content=\"{}\">\n", *o.refresh_s);
  head += "<title>" + escape(o.title) + " - egm</title>\n";
  head += R"(<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2330;color:#fff;padding:.6em 1.2em;display:flex;gap:1.5em;align-items:baseline;flex-wrap:wrap}
header a{color:#cfe3ff;text-decoration:none} header .db{color:#9aa4b5;font-size:.85em;margin-left:auto}
main{padding:.8em 1.2em 2em;max-width:1400px}
h1{font-size:1.35em;margin:.4em 0} h2{font-size:1.1em;margin:1.4em 0 .4em;border-bottom:1px solid #dde2ea}
table{border-collapse:collapse;font-size:.85em;margin:.3em 0 .6em;background:#fff}
th,td{border:1px solid #dde2ea;padding:.2em .5em;text-align:left;white-space:nowrap}
th{background:#eef1f6} td.num{text-align:right;font-variant-numeric:tabular-nums}
.downloads{font-size:.8em;color:#5a6475} .downloads a{margin-right:.6em}
.bar{display:inline-block;width:10em;height:.8em;background:#e4e8ef;border-radius:3px;vertical-align:middle;overflow:hidden}
.bar>span{display:block;height:100%;background:#2f7ed8}
.status{font-weight:600} .status-running{color:#1f7a1f} .status-stale,.status-failed{color:#b3261e}
.status-done{color:#1d2330} .status-interrupted,.status-pending{color:#8a6d00}
.verdict{font-size:1.05em;padding:.4em .7em;background:#eef6ff;border-left:4px solid #2f7ed8;display:inline-block}
.note{color:#5a6475;font-size:.9em} .error{color:#b3261e;font-weight:600}
.plots{display:flex;flex-wrap:wrap;gap:1em} svg{background:#fff;border:1px solid #dde2ea}
textarea{width:100%;max-width:60em;font-family:ui-monospace,monospace;font-size:.9em}
pre{background:#fff;border:1px solid #dde2ea;padding:.5em;overflow:auto;max-width:100%}
</style></head><body>
)";
  head += "<header><strong><a href=\"/\">egm</a></strong><a href=\"/\">sweeps</a><a href=\"/query\">SQL</a>";
  head += "<span class=\"db\">" + escape(o.db_path) + " (read-only)</span></header>\n<main>\n";
  std::string tail = "</main>\n<footer class=\"note\" style=\"padding:0 1.2em 1em\">egm serve: a read-only view";
  if (!o.generated_at.empty()) tail += "; page generated " + escape(o.generated_at);
  if (o.refresh_s) tail += fmt::format("; reloads every {} s while the sweep runs", *o.refresh_s);
  tail += "</footer>\n</body></html>\n";
  return head + body + tail;
}

std::string html_table(const db::Table& t, const TableOptions& o) {
  std::string out;
  // Download links: the table's path plus .csv or .json, with the page's query string kept.
  if (!o.links.empty())
    out += fmt::format("<div class=\"downloads\">download: <a href=\"{0}.csv{1}\">CSV</a><a "
                       "href=\"{0}.json{1}\">JSON</a>",
                       escape(o.links), escape(o.links_query)) +
           fmt::format(" ({} row{})</div>\n", t.rows.size(), t.rows.size() == 1 ? "" : "s");
  out += "<table";
  if (!o.id.empty()) out += " id=\"" + escape(o.id) + "\"";
  out += ">";
  if (!o.caption.empty()) out += "<caption>" + escape(o.caption) + "</caption>";
  out += "<thead><tr>";
  for (const auto& c : t.columns) out += "<th>" + escape(c) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  db::FormatOptions fo;
  fo.float_digits = o.digits;
  fo.null_text = o.null_text;
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      const db::Value& v = row[i];
      // Numbers right-aligned with tabular digits (td.num in the style sheet above).
      const bool num = std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
      const std::string text = db::value_text(v, fo);
      out += num ? "<td class=\"num\">" : "<td>";
      // The text is url-encoded into one path segment, then the whole href escaped for the attribute.
      if (static_cast<int>(i) == o.link_column && !text.empty())
        out += "<a href=\"" + escape(o.link_prefix + url_encode(text)) + "\">" + escape(text) + "</a>";
      else
        out += escape(text);
      out += "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

std::string progress_bar(double fraction) {
  // A NaN or infinite fraction would write an invalid CSS width; it shows as 0% instead.
  if (!std::isfinite(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  return fmt::format("<span class=\"bar\"><span style=\"width:{:.1f}%\"></span></span> {:.1f}%", 100 * fraction,
                     100 * fraction);
}

}  // namespace egm::serve
