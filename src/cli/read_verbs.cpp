// The read-only verbs' shared pieces (read_verbs.h): a table printed as egm query
// prints it, and the analysis flags of egm analyze and egm report.
#include "cli/read_verbs.h"

#include <iostream>

#include "analysis/sweep_data.h"
#include "cli/commands.h"
#include "util/terminal_text.h"

namespace egm::cli {

void print_table(const db::Table& table, db::Format format, const db::FormatOptions& options) {
  const std::string text = db::format_table(table, format, options);
  if (format == db::Format::table)
    print_safe(text);
  else
    std::cout << text;
}

void add_sweep_flags(CLI::App* cmd, AnalysisFlags& flags) {
  cmd->add_option("sweep", flags.sweep, "the sweep's name (a superseded one as NAME@ID)")->required();
  add_db_flag(cmd, flags.db);
  cmd->add_option("--metric", flags.metric, "metric of the deltas and the interaction: " + analysis::metric_choices())
      ->capture_default_str();
  cmd->add_option("--level", flags.level, "confidence level of every interval")->capture_default_str();
  cmd->add_option("--factors", flags.factors,
                  "the 2x2 as a,b,ab,base (default: the spec's, else ega,mope,ega_mope,base)");
}

void add_pairing_flags(CLI::App* cmd, AnalysisFlags& flags) {
  cmd->add_flag("--allow-mixed-world-size", flags.allow_mixed,
                "pair cells that ran with different world sizes or backends (refused otherwise)");
  cmd->add_flag("--allow-mixed-device", flags.allow_mixed_device,
                "pair cells that ran on different device kinds, CPU and CUDA (refused otherwise)");
  cmd->add_option("--seed", flags.seed, "RNG seed of the bootstrap and the k-means")->capture_default_str();
}

void add_cluster_runs_flag(CLI::App* cmd, AnalysisFlags& flags) {
  cmd->add_option("--cluster-runs", flags.cluster_runs,
                  "MoPE runs clustered per variant (k-means, gap statistic): at most N, evenly spaced in seed "
                  "order, or 'all'")
      ->capture_default_str();
}

analysis::AnalysisOptions analysis_options(const AnalysisFlags& flags) {
  analysis::AnalysisOptions options;
  options.metric = analysis::parse_metric(flags.metric);
  options.level = flags.level;
  if (!flags.factors.empty()) options.factors = analysis::parse_factors(flags.factors);
  options.allow_mixed_setups = flags.allow_mixed;
  options.allow_mixed_devices = flags.allow_mixed_device;
  options.rng_seed = flags.seed;
  options.params.cluster_runs = analysis::parse_cluster_runs(flags.cluster_runs);
  return options;
}

}  // namespace egm::cli
