// `/paper`: the paper's scorecard (src/analysis/scorecard.h, what `egm paper`
// prints), every published claim beside egm's estimate from each sweep that
// measured it, with the built-in claims; paper.csv|json: its CSV and JSON forms.
#include "serve/pages.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/scorecard.h"

namespace egm::serve {

Response paper_page(Context& c, std::optional<db::Format> format) {
  // The claims built into egm, each scored against every sweep of this database that measured it.
  const analysis::Scorecard card = analysis::build_scorecard(c.db, analysis::embedded_claims());
  if (format == db::Format::csv) return download(analysis::scorecard_number_table(card), *format, "paper");
  if (format) {  // the JSON of egm paper --format json, every number and the claims' texts
    Response r;
    r.content_type = "application/json";
    r.body = analysis::scorecard_json(card).dump(2) + "\n";
    r.filename = "paper.json";
    return r;
  }
  const db::Table t = analysis::scorecard_display_table(card);
  std::string body = "<h1>The paper's claims, measured</h1>\n";
  body += fmt::format("<p>Published: {}; {}. Claims: {}. {} intervals; verdicts are on the sign of each published "
                      "delta; a sweep with looks is decided by its anytime-valid sequence. Cells pair within one "
                      "sweep (one grid point) only.</p>\n",
                      escape(card.claims.source), escape(card.claims.published_scale), escape(card.claims.origin),
                      escape(analysis::percent(card.level)));
  body += fmt::format("<div class=\"downloads\">download: <a href=\"/paper.csv\">CSV</a><a href=\"/paper.json\">"
                      "JSON</a> ({} row{})</div>\n",
                      t.rows.size(), t.rows.size() == 1 ? "" : "s");
  body += "<table id=\"scorecard\"><thead><tr>";
  for (const std::string& col : t.columns) body += "<th>" + escape(col) + "</th>";
  body += "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const analysis::ScoreRow& r = card.rows[i];
    const std::vector<db::Value>& row = t.rows[i];
    // Column 7 of the display table is the verdict; the data attributes let scripts find a row without its text.
    body += fmt::format("<tr data-claim=\"{}\" data-verdict=\"{}\">",
                        escape(card.claims.claims.at(r.claim).id), escape(db::value_text(row[7])));
    for (std::size_t k = 0; k < row.size(); ++k) {
      const std::string text = db::value_text(row[k]);
      if (k == 2 && !r.sweep.empty())  // the sweep, linked to its page
        body += fmt::format("<td><a href=\"/sweep/{}\">{}</a></td>", escape(url_encode(r.sweep)), escape(text));
      else
        // Column 4, the seeds, is the one number; the estimate is text with its interval.
        body += (k == 4 ? "<td class=\"num\">" : "<td>") + escape(text) + "</td>";
    }
    body += "</tr>\n";
  }
  body += "</tbody></table>\n";
  for (const std::string& n : card.notes) body += "<p class=\"note\">" + escape(n) + "</p>\n";
  Response r;
  r.body = page(c.page_options("the paper's claims", false), body);
  return r;
}

}  // namespace egm::serve
