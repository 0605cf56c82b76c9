// `/`: every sweep with its status, progress, ETA and staleness, as `egm
// status` shows them (sweeps.csv|json: the same table for scripts).
#include "serve/pages.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace egm::serve {

namespace {

// ---- the sweeps list ---------------------------------------------------------------------

db::Table sweeps_table(Context& c, const std::vector<db::SweepRow>& sweeps, std::vector<SweepState>& states) {
  db::Table t;
  t.columns = {"sweep",    "status",   "cells",       "done",         "running",       "pending",      "failed",
               "interrupted", "steps_done", "steps_to_run", "progress", "eta_s", "created_utc", "updated_utc",
               "heartbeat_utc", "slurm_job_id"};
  for (const auto& s : sweeps) {
    // Kept for the HTML rows, so each sweep's progress is read once per page.
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

}  // namespace

Response sweeps_page(Context& c, const Params& params, std::optional<db::Format> format) {
  bool all = false;
  if (auto it = params.find("all"); it != params.end()) {
    // Only 0 or 1, as every other parameter's value is checked: a typo is refused, not ignored.
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
      // The list reloads itself while any sweep on it is live.
      live = live || st.live();
      body += fmt::format(
          "<tr data-sweep=\"{0}\"><td><a href=\"/sweep/{1}\">{0}</a></td><td>{2}</td><td class=\"progress\" "
          "data-progress=\"{3:.6f}\">{4}</td><td class=\"num\">{5}</td><td class=\"num\">{6}</td><td "
          "class=\"num\">{7}</td><td class=\"num\">{8}</td><td class=\"num\">{9}</td><td class=\"num\">{10}</td>"
          "<td>{11}</td><td>{12}</td><td>{13}</td><td>{14}</td></tr>\n",
          escape(s.name), escape(url_encode(s.name)), status_span(st.status), st.fraction, progress_bar(st.fraction),
          p.total, p.done, p.running, p.pending, p.failed, p.interrupted,
          // A stale sweep has no ETA: its coordinator stopped beating.
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

}  // namespace egm::serve
