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
#include "db/results_db.h"
#include "db/table_format.h"
#include "util/files.h"

namespace egm::cli {
namespace {

struct ReportCliOptions {
  std::string sweep;
  std::string db;
  std::string out;
  std::string metric = "final_val";
  double level = 0.95;
  std::string factors;
  bool allow_mixed = false;
  bool allow_mixed_device = false;
  uint64_t seed = 12345;
  std::string gnuplot = "gnuplot";
  std::string cluster_runs = std::to_string(analysis::ParamOptions{}.cluster_runs);
};

// The compute statement beside the report (compute.md, compute.csv), and its first line on stdout.
void write_compute(db::ResultsDb& results, const std::string& sweep, const std::vector<analysis::Claim>& claims,
                   const std::string& out_dir) {
  const analysis::ComputeStatement c = analysis::compute_statement(results, sweep, claims);
  const std::string text = analysis::render_compute_text(c);
  atomic_write_file(out_dir + "/compute.md", "# Compute\n\n```\n" + text + "```\n");
  atomic_write_file(out_dir + "/compute.csv", db::format_table(analysis::compute_table(c), db::Format::csv));
  print_safe(text.substr(0, text.find('\n') + 1));
}

void run_report(const ReportCliOptions& o) {
  analysis::ReportOptions options;
  options.out_dir = o.out;
  options.gnuplot = o.gnuplot;
  options.analysis.metric = analysis::parse_metric(o.metric);
  options.analysis.level = o.level;
  if (!o.factors.empty()) options.analysis.factors = analysis::parse_factors(o.factors);
  options.analysis.allow_mixed_setups = o.allow_mixed;
  options.analysis.allow_mixed_devices = o.allow_mixed_device;
  options.analysis.rng_seed = o.seed;
  options.analysis.params.cluster_runs = analysis::parse_cluster_runs(o.cluster_runs);
  // Read-only: a report may be written while the coordinator still runs the sweep.
  db::ResultsDb results = db::open_for_reading(o.db);
  const analysis::SweepData data = analysis::load_sweep(results, o.sweep);
  if (analysis::has_grid(data)) {  // a full report per grid point, and the comparison across points
    const analysis::GridReportResult g = analysis::write_grid_report(data, options);
    print_safe(analysis::render_grid_across_markdown(g.analysis) + "\n");
    write_compute(results, o.sweep, {}, g.out_dir);
    print_safe("wrote {} files to {} (start with {}/index.md)\n", g.files.size() + 2, g.out_dir, g.out_dir);
    if (!g.plots_made) fmt::print(stderr, "egm report: no plots: {}\n", terminal_safe(g.plot_message));
    return;
  }
  const analysis::ReportResult r = analysis::write_report(data, options);
  print_safe(analysis::render_main_table(r.analysis) + "\n");
  write_compute(results, o.sweep, analysis::claims_of(r.analysis), r.out_dir);
  print_safe("wrote {} files to {} (start with {}/index.md)\n", r.files.size() + 2, r.out_dir, r.out_dir);
  if (!r.plots_made) fmt::print(stderr, "egm report: no plots: {}\n", terminal_safe(r.plot_message));
}

}  // namespace

void register_report_command(CLI::App& app) {
  auto opts = std::make_shared<ReportCliOptions>();
  auto* cmd = app.add_subcommand("report", "tables (Markdown, LaTeX, CSV, JSON) and plots of a sweep in a folder");
  cmd->add_option("sweep", opts->sweep, "the sweep's name (a superseded one as NAME@ID)")->required();
  cmd->add_option("--out", opts->out, "output folder (created; files in it are replaced)")->required();
  cmd->add_option("--db", opts->db, "results database (default: $EGM_DB, else runs/egm.sqlite)");
  cmd->add_option("--metric", opts->metric, "metric of the deltas and the interaction: final_val, best_val, "
                                            "full_val or ar_val")
      ->capture_default_str();
  cmd->add_option("--level", opts->level, "confidence level of every interval")->capture_default_str();
  cmd->add_option("--factors", opts->factors,
                  "the 2x2 as a,b,ab,base (default: the spec's, else ega,mope,ega_mope,base)");
  cmd->add_flag("--allow-mixed-world-size", opts->allow_mixed,
                "pair cells that ran with different world sizes or backends (refused otherwise)");
  cmd->add_flag("--allow-mixed-device", opts->allow_mixed_device,
                "pair cells that ran on different device kinds, CPU and CUDA (refused otherwise)");
  cmd->add_option("--seed", opts->seed, "RNG seed of the bootstrap and the k-means")->capture_default_str();
  cmd->add_option("--cluster-runs", opts->cluster_runs,
                  "MoPE runs clustered per variant (k-means, gap statistic): at most N, evenly spaced in seed "
                  "order, or 'all'")
      ->capture_default_str();
  cmd->add_option("--gnuplot", opts->gnuplot, "gnuplot program (name on $PATH or path; empty: no plots)")
      ->capture_default_str();
  cmd->callback([opts] { run_report(*opts); });
}

}  // namespace egm::cli
