// egm report: writes a folder with the paper-layout tables (Markdown, LaTeX,
// CSV), the full analysis (Markdown, text, JSON), per-section CSVs and
// gnuplot plots (PNG, SVG) for one sweep, linked from DIR/index.md. Reads the
// results database read-only. Without gnuplot the tables are still written.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "analysis/compute.h"
#include "analysis/grid_analysis.h"
#include "analysis/render.h"
#include "analysis/report.h"
#include "cli/commands.h"
#include "cli/read_verbs.h"
#include "db/results_db.h"
#include "db/table_format.h"
#include "util/files.h"

namespace egm::cli {
namespace {

struct ReportCliOptions {
  AnalysisFlags analysis;
  std::string out;
  std::string gnuplot = "gnuplot";
};

// The compute statement beside the report (compute.md, compute.csv), and its first line on stdout.
void write_compute(db::ResultsDb& results, const std::string& sweep, const std::vector<analysis::Claim>& claims,
                   const std::string& out_dir) {
  const analysis::ComputeStatement c = analysis::compute_statement(results, sweep, claims);
  const std::string text = analysis::render_compute_text(c);
  atomic_write_file(out_dir + "/compute.md", "# Compute\n\n```\n" + text + "```\n");
  atomic_write_file(out_dir + "/compute.csv", db::format_table(analysis::compute_table(c), db::Format::csv));
  // Its first line; a statement of one line without a newline is printed whole.
  const size_t newline = text.find('\n');
  print_safe(newline == std::string::npos ? text + "\n" : text.substr(0, newline + 1));
}

void run_report(const ReportCliOptions& o) {
  analysis::ReportOptions options;
  options.out_dir = o.out;
  options.gnuplot = o.gnuplot;
  options.analysis = analysis_options(o.analysis);
  const std::string& sweep = o.analysis.sweep;
  // Read-only: a report may be written while the coordinator still runs the sweep.
  db::ResultsDb results = db::open_for_reading(o.analysis.db);
  const analysis::SweepData data = analysis::load_sweep(results, sweep);
  if (analysis::has_grid(data)) {  // a full report per grid point, and the comparison across points
    const analysis::GridReportResult g = analysis::write_grid_report(data, options);
    print_safe(analysis::render_grid_across_markdown(g.analysis) + "\n");
    write_compute(results, sweep, {}, g.out_dir);
    print_safe("wrote {} files to {} (start with {}/index.md)\n", g.files.size() + 2, g.out_dir, g.out_dir);
    if (!g.plots_made) fmt::print(stderr, "egm report: no plots: {}\n", terminal_safe(g.plot_message));
    return;
  }
  const analysis::ReportResult r = analysis::write_report(data, options);
  print_safe(analysis::render_main_table(r.analysis) + "\n");
  write_compute(results, sweep, analysis::claims_of(r.analysis), r.out_dir);
  print_safe("wrote {} files to {} (start with {}/index.md)\n", r.files.size() + 2, r.out_dir, r.out_dir);
  if (!r.plots_made) fmt::print(stderr, "egm report: no plots: {}\n", terminal_safe(r.plot_message));
}

}  // namespace

void register_report_command(CLI::App& app) {
  auto opts = std::make_shared<ReportCliOptions>();
  auto* cmd = app.add_subcommand("report", "tables (Markdown, LaTeX, CSV, JSON) and plots of a sweep in a folder");
  // --out first: it is listed before --db (the sweep, a positional, is listed apart).
  cmd->add_option("--out", opts->out, "output folder (created; files in it are replaced)")->required();
  add_sweep_flags(cmd, opts->analysis);
  add_pairing_flags(cmd, opts->analysis);
  add_cluster_runs_flag(cmd, opts->analysis);
  cmd->add_option("--gnuplot", opts->gnuplot, "gnuplot program (name on $PATH or path; empty: no plots)")
      ->capture_default_str();
  cmd->callback([opts] { run_report(*opts); });
}

}  // namespace egm::cli
