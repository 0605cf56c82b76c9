// egm paper: the paper's scorecard from a results database (read-only): every
// published claim of SPEC.md section 4 beside egm's estimate from each sweep
// that measured it, with its scale, intervals and verdict
// (src/analysis/scorecard.h; the claims: experiments/paper_claims.json).
#include <iostream>
#include <memory>

#include "analysis/paper_claims.h"
#include "analysis/scorecard.h"
#include "cli/commands.h"
#include "db/results_db.h"
#include "util/terminal_text.h"

namespace egm::cli {
namespace {

struct PaperOptions {
  std::string db;
  std::string claims;
  std::string format = "text";
  std::vector<std::string> sweeps;
  double level = 0.95;
  uint64_t seed = 12345;
  std::string cluster_runs = std::to_string(analysis::ParamOptions{}.cluster_runs);
};

void run_paper(const PaperOptions& o) {
  // Everything that can be refused is checked before the database is read.
  const analysis::ScorecardFormat format = analysis::parse_scorecard_format(o.format);
  const analysis::PaperClaims claims = analysis::load_claims(o.claims);
  analysis::ScorecardOptions options;
  options.level = o.level;
  options.rng_seed = o.seed;
  options.sweeps = o.sweeps;
  options.params.cluster_runs = analysis::parse_cluster_runs(o.cluster_runs);
  db::ResultsDb results = db::open_for_reading(o.db);
  const analysis::Scorecard card = analysis::build_scorecard(results, claims, options);
  SafeStdout out;  // text from the database: control bytes escaped (util/terminal_text.h)
  out << analysis::render_scorecard(card, format);
}

}  // namespace

void register_paper_command(CLI::App& app) {
  auto opts = std::make_shared<PaperOptions>();
  auto* cmd = app.add_subcommand("paper", "the paper's scorecard: every published claim beside egm's estimate "
                                          "from each sweep that measured it");
  add_db_flag(cmd, opts->db);
  cmd->add_option("--claims", opts->claims,
                  "a claims file in place of the built-in one (experiments/paper_claims.json)");
  cmd->add_option("--format", opts->format, "text, markdown, csv or json")->capture_default_str();
  cmd->add_option("--sweep", opts->sweeps, "only these sweeps (repeat; a superseded one as NAME@ID)");
  cmd->add_option("--level", opts->level, "confidence level of every interval")->capture_default_str();
  cmd->add_option("--seed", opts->seed, "RNG seed of the bootstrap and the k-means")->capture_default_str();
  cmd->add_option("--cluster-runs", opts->cluster_runs,
                  "MoPE runs clustered per variant (the four-clusters claim): at most N, or 'all'")
      ->capture_default_str();
  cmd->footer("Verdicts are on the sign of each published delta: reproduced in sign, contradicted, not settled, "
              "not measured. Cells pair within one sweep (one grid point) only; a claim measured by two sweeps "
              "has two rows.");
  cmd->callback([opts] { run_paper(*opts); });
}

}  // namespace egm::cli
