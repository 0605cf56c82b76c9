// egm analyze: the multi-seed statistics of one sweep, read from the results
// database (read-only): per-variant summaries with Student-t intervals,
// deltas against the baseline (paired by seed, Wilcoxon, Holm), the 2x2
// interaction with its verdict, the published numbers side by side, and the
// learned MoPE / gate parameters. src/analysis/README.md explains the output.
#include <iostream>
#include <memory>

#include "analysis/compute.h"
#include "analysis/grid_analysis.h"
#include "analysis/render.h"
#include "analysis/sequences.h"
#include "analysis/sweep_analysis.h"
#include "cli/commands.h"
#include "cli/read_verbs.h"
#include "db/results_db.h"

namespace egm::cli {
namespace {

struct AnalyzeOptions {
  AnalysisFlags analysis;
  std::string format = "table";
  bool no_params = false;
  std::string adjust = "bonferroni";
};

void run_analyze(const AnalyzeOptions& o) {
  SafeStdout out;  // text from the database: control bytes escaped (util/terminal_text.h)
  analysis::AnalysisOptions options = analysis_options(o.analysis);
  options.analyse_params = !o.no_params;
  // Parsed before the database is opened: a typo in --format fails at once.
  const analysis::OutputFormat format = analysis::parse_output_format(o.format);
  const std::string& sweep = o.analysis.sweep;
  const double level = o.analysis.level;
  db::ResultsDb results = db::open_for_reading(o.analysis.db);
  // --no-params skips reading the parameter snapshots, the bulk of a large sweep's file.
  const analysis::SweepData data = analysis::load_sweep(results, sweep, !o.no_params);
  const bool text_format = format == analysis::OutputFormat::table || format == analysis::OutputFormat::markdown;
  analysis::SequenceOptions so;  // alpha = 1 - level; a level of 0.5 or less has no sequence
  so.alpha = 1.0 - level;
  so.adjustment = stats::parse_adjustment(o.adjust);
  auto print_sequences = [&](const analysis::SweepAnalysis& a, const std::string& heading) {
    // Only the text forms: CSV and JSON stay the analysis alone, as their readers expect.
    if (!text_format || level <= 0.5) return;
    const std::string text =
        analysis::render_sequences_text(analysis::claim_sequences(a, data.spec.seeds, so), so, level);
    if (text.empty()) return;
    out << "\n" << heading;
    out << (format == analysis::OutputFormat::markdown ? "```\n" + text + "```\n" : text);
  };
  if (analysis::has_grid(data)) {  // every section per grid point, then across points
    const analysis::GridAnalysis g = analysis::analyze_grid(data, options);
    out << analysis::render_grid(g, format);
    // Each point's claims are a family of their own: one configuration each,
    // as a sequential sweep (one spec per point) would settle them.
    for (const analysis::PointAnalysis& p : g.points)
      print_sequences(p.analysis, fmt::format(format == analysis::OutputFormat::markdown ? "### Grid point {}: {}\n\n"
                                                                                           : "grid point {}: {}\n",
                                              p.index, p.label));
    if (text_format) {
      out << "\n" << analysis::render_compute_text(analysis::compute_statement(results, sweep));
      out << "corpus: " << db::describe_corpus(data.sweep) << "\n";
    }
    return;
  }
  const analysis::SweepAnalysis a = analysis::analyze_sweep(data, options);
  out << analysis::render_analysis(a, format);
  // Each claim's anytime-valid sequence beside its fixed-n t interval (src/analysis/sequences.h).
  print_sequences(a, "");
  // What the table cost (src/analysis/compute.h); the CSV and JSON forms stay the analysis alone.
  if (format == analysis::OutputFormat::table || format == analysis::OutputFormat::markdown) {
    out << "\n"
              << analysis::render_compute_text(analysis::compute_statement(results, sweep, analysis::claims_of(a)));
    // The data behind every number (schema v9; "unknown" for a sweep run before egm recorded it).
    out << "corpus: " << db::describe_corpus(data.sweep) << "\n";
  }
}

}  // namespace

void register_analyze_command(CLI::App& app) {
  auto opts = std::make_shared<AnalyzeOptions>();
  auto* cmd = app.add_subcommand("analyze", "multi-seed statistics of a sweep: intervals, deltas, 2x2 interaction");
  add_sweep_flags(cmd, opts->analysis);
  cmd->add_option("--format", opts->format, "table, csv (the paper table), json (everything) or markdown")
      ->capture_default_str();
  add_pairing_flags(cmd, opts->analysis);
  cmd->add_option("--adjust", opts->adjust, "confidence sequences over the claims: bonferroni, holm or none")
      ->capture_default_str();
  cmd->add_flag("--no-params", opts->no_params, "skip the learned-parameter analysis (MoPE, gates)");
  add_cluster_runs_flag(cmd, opts->analysis);
  cmd->footer("Only cells with status done count; the others are listed with the reason. "
              "delta = baseline - variant (positive = better); I = delta(ab) - delta(a) - delta(b).");
  cmd->callback([opts] { run_analyze(*opts); });
}

}  // namespace egm::cli
