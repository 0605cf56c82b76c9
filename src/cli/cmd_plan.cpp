// egm plan: the seeds each claim of a sweep needs, from its pilot seeds'
// per-seed paired contrasts, and the cells and compute that implies
// (src/analysis/plan.h). Read-only and torch-free, like egm analyze.
#include <iostream>
#include <memory>

#include "analysis/plan.h"
#include "cli/commands.h"
#include "db/results_db.h"
#include "util/error.h"
#include "util/terminal_text.h"

namespace egm::cli {
namespace {

struct PlanCliOptions {
  std::string sweep;
  std::string db;
  std::string metric = "final_val";
  std::string factors;
  bool allow_mixed = false;
  double alpha = 0.05;
  std::string adjust = "holm";
  double half_width = 0;
  double effect = 0;
  double power = 0.8;
  std::vector<std::string> claims;
  std::string format = "table";
};

void run_plan(const PlanCliOptions& o, const CLI::App& cmd) {
  SafeStdout out;  // text from the database: control bytes escaped (util/terminal_text.h)
  analysis::PlanOptions options;
  options.analysis.metric = analysis::parse_metric(o.metric);
  if (!o.factors.empty()) options.analysis.factors = analysis::parse_factors(o.factors);
  options.analysis.allow_mixed_setups = o.allow_mixed;
  options.alpha = o.alpha;
  options.adjustment = stats::parse_adjustment(o.adjust);
  // Only when given: the two targets are optional, and plan_sweep tells which one was asked for by presence.
  if (cmd.count("--half-width")) options.half_width = o.half_width;
  if (cmd.count("--effect")) options.effect = o.effect;
  options.power = o.power;
  options.claims = o.claims;
  // Checked before the database is opened, so a typo fails at once.
  EGM_REQUIRE(o.format == "table" || o.format == "json", ConfigError, "--format must be table or json, got '{}'",
              o.format);
  db::ResultsDb results = db::open_for_reading(o.db);
  const std::vector<analysis::SweepPlan> plans = analysis::plan_sweep(results, o.sweep, options);
  out << (o.format == "json" ? analysis::plan_json(plans) : analysis::render_plan_text(plans));
}

}  // namespace

void register_plan_command(CLI::App& app) {
  auto opts = std::make_shared<PlanCliOptions>();
  auto* cmd = app.add_subcommand("plan", "seeds each claim needs (half-width or power), from the pilot seeds, "
                                         "and the cells and compute that implies");
  cmd->add_option("sweep", opts->sweep, "the sweep's name (a superseded one as NAME@ID)")->required();
  add_db_flag(cmd, opts->db);
  cmd->add_option("--half-width", opts->half_width, "plan for a t interval of +-H on each claim (loss units)");
  cmd->add_option("--effect", opts->effect, "plan to detect an effect of E (loss units) with --power");
  cmd->add_option("--power", opts->power, "power to detect --effect")->capture_default_str();
  cmd->add_option("--alpha", opts->alpha, "family-wise error rate over the claims, in (0, 0.5)")
      ->capture_default_str();
  cmd->add_option("--adjust", opts->adjust, "over the claims: holm (planned at alpha/m, as Holm's first step), "
                                            "bonferroni (alpha/m) or none (alpha each)")
      ->capture_default_str();
  cmd->add_option("--claims", opts->claims, "claims to plan (default all): a variant or delta(VARIANT), interaction")
      ->delimiter(',');
  cmd->add_option("--metric", opts->metric, analysis::metric_choices())->capture_default_str();
  cmd->add_option("--factors", opts->factors, "the 2x2 as a,b,ab,base (default: the spec's)");
  cmd->add_flag("--allow-mixed-world-size", opts->allow_mixed,
                "pair cells that ran with different world sizes or backends (refused otherwise)");
  cmd->add_option("--format", opts->format, "table or json")->capture_default_str();
  cmd->footer("Fixed-n planning with the paired t over seeds, the pilot's sd taken as the truth; a pilot of fewer "
              "than 3 seeds is said to be too small. Compute: the measured cost per done cell times the cells to add.");
  cmd->callback([opts, cmd] { run_plan(*opts, *cmd); });
}

}  // namespace egm::cli
