// The statistics of one sweep, in the shape of the paper's claims: per-variant
// summaries over seeds, deltas against the baseline (paired by seed where
// possible, Holm-adjusted), the 2x2 interaction with a verdict, the published
// numbers side by side, and the learned-parameter analysis. Everything here
// is data; render.h turns it into text, Markdown, LaTeX, CSV or JSON.
//
// Conventions (the paper's): delta(X) = baseline - X in val loss, positive =
// better than the baseline; I = delta(ab) - delta(a) - delta(b) > 0 means
// superadditive. Only cells with status 'done' and a value of the metric
// count; every other cell is listed in `excluded` with its reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/param_analysis.h"
#include "analysis/provenance.h"
#include "analysis/sweep_data.h"
#include "db/results_db.h"
#include "stats/descriptive.h"
#include "stats/interaction.h"
#include "stats/seed_values.h"
#include "stats/wilcoxon.h"

namespace egm::analysis {

struct AnalysisOptions {
  Metric metric = Metric::final_val;  // the metric of the deltas and the interaction
  double level = 0.95;
  std::optional<Factors> factors;     // overrides the spec's (default: ega, mope, ega_mope, base when present)
  // Pair cells whose attempts ran with another world size or backend (a
  // ConfigError otherwise; with this set they become warnings).
  bool allow_mixed_setups = false;
  // Pair cells whose attempts ran on another device kind (CPU vs CUDA: another
  // dropout generator, other kernels; a ConfigError otherwise, warnings with it).
  bool allow_mixed_devices = false;
  std::uint64_t rng_seed = 12345;     // bootstrap and k-means: same seed, same numbers
  std::size_t bootstrap_resamples = 10000;
  bool analyse_params = true;
  ParamOptions params;
};

// A cell that does not count, and why.
struct Exclusion {
  std::string key;
  std::string variant;
  int64_t seed = 0;
  std::string status;  // the cell's status
  std::string reason;  // "failed, out of retries (3/3): <error>", "running", "done but no ar_val", ...
};

struct MetricSummary {
  Metric metric = Metric::final_val;
  stats::SeedValues by_seed;
  stats::Summary summary;  // n = 0 when no cell has the metric
  std::vector<RunSetup> setups;  // distinct setups of the cells counted
};

struct VariantSummary {
  std::string variant;
  std::string attention;  // from the variant table; "?" for an unknown name
  std::string position;
  std::vector<MetricSummary> metrics;  // one per all_metrics(), n = 0 when not measured
  const MetricSummary& at(Metric metric) const { return metrics.at(static_cast<size_t>(metric.index())); }
};

// A difference with its interval (delta, sum of parts, ...).
struct Estimate {
  double estimate = 0.0;
  double se = 0.0;
  double df = 0.0;
  double ci_low = 0.0;
  double ci_high = 0.0;
  bool has_interval = false;
  std::size_t n = 0;  // paired: seeds; unpaired: the smaller group
};
// A t contrast as an Estimate of n values (paired: seeds; unpaired: the smaller group).
Estimate from_contrast(const stats::ContrastResult& c, std::size_t n);

// delta(variant) = baseline - variant on one metric.
struct DeltaResult {
  std::string variant;
  Metric metric = Metric::final_val;
  bool paired = false;                   // over shared seeds (>= 2 shared), else Welch
  std::vector<int64_t> seeds;            // paired: the shared seeds
  std::vector<double> per_seed;          // paired: baseline_s - variant_s
  std::vector<int64_t> unmatched_seeds;  // paired: seeds of either side without a partner (not used)
  Estimate delta;
  double p = 0.0;        // paired t or Welch t, two-sided; NaN without an interval
  double p_holm = 0.0;   // Holm over the variants compared with the baseline on this metric
  bool has_wilcoxon = false;
  stats::WilcoxonResult wilcoxon;  // paired only
  std::string method;
};

struct InteractionAnalysis {
  Factors factors;
  Metric metric = Metric::final_val;
  stats::InteractionResult result;     // estimate, t interval, bootstrap, ratio scale, verdict
  std::vector<int64_t> unmatched_seeds;  // paired: seeds missing from some cell (not used)
  Estimate sum_of_parts;               // delta(a) + delta(b), same pairing as the interaction
  std::string verdict_text;            // one sentence
};

struct PublishedRow {
  std::string variant;
  double published = 0.0;
  stats::Summary ours;      // our summary of the published metric (n = 0: not measured)
  bool inside_ci = false;   // inside the t interval of our mean
  // One seed's value scatters like the seeds, not like their mean: the
  // prediction interval mean +- t * sd * sqrt(1 + 1/n) is where a new seed
  // would fall. The paper reports one seed, so this is the fairer check.
  double prediction_low = 0.0;
  double prediction_high = 0.0;
  bool inside_prediction = false;
  bool has_interval = false;
  std::optional<double> published_delta;  // published(baseline) - published(variant)
  std::optional<Estimate> our_delta;
  bool delta_inside = false;
};

struct PublishedComparison {
  std::string source;
  Metric metric = Metric::final_val;
  std::vector<PublishedRow> rows;
  std::optional<double> published_interaction;  // from the published values of the four factor cells
  std::optional<InteractionAnalysis> our_interaction;  // on the published metric
  bool interaction_inside = false;
};

// A comparison that pairs cells run with different world sizes or backends.
struct SetupConflict {
  std::string comparison;  // "delta(ega) seed 2", "interaction seed 0", ...
  std::string detail;      // "base-s2: world 1 / none on cpu; ega-s2: world 2 / nccl on cuda"
  bool mixed_world = false;   // the cells differ in world size or backend
  bool mixed_device = false;  // the cells differ in device kind (cpu, cuda)
};

struct SweepAnalysis {
  std::string sweep;
  std::string description;
  Metric metric = Metric::final_val;
  double level = 0.95;
  std::string baseline;  // empty: no baseline, no deltas
  std::size_t cells_total = 0;
  std::size_t cells_used = 0;  // done with a value of `metric`
  std::vector<Exclusion> excluded;
  std::vector<VariantSummary> variants;  // spec order
  std::vector<DeltaResult> deltas;       // on `metric`, spec order, baseline left out
  std::optional<InteractionAnalysis> interaction;
  std::string no_interaction_reason;     // why there is none
  std::optional<PublishedComparison> published;
  std::vector<SetupConflict> setup_conflicts;  // only when allowed; otherwise analyze_sweep throws
  std::vector<ProvenanceMix> provenance;       // comparisons whose cells different code trained (a warning)
  std::vector<std::string> notes;              // what was not computed, and why
  std::vector<db::ReusedCell> reused;          // cells that reused a finished run (SweepData::reused)
  ParamAnalysis params;
  std::uint64_t rng_seed = 0;
  const VariantSummary* find_variant(const std::string& name) const;
  const DeltaResult* find_delta(const std::string& variant) const;
};

// Throws ConfigError when the analysis would pair cells with different
// setups (world size, backend) and !options.allow_mixed_setups, naming them.
SweepAnalysis analyze_sweep(const SweepData& data, const AnalysisOptions& options = {});
SweepAnalysis analyze_sweep(db::ResultsDb& db, const std::string& sweep, const AnalysisOptions& options = {});

// A coverage level as people write it: 0.95 -> "95%".
std::string percent(double level);
// "superadditive: the 95% interval of I lies above 0", ...
std::string verdict_sentence(stats::Verdict verdict, double level);
// "superadditive", "additive-consistent", "subadditive", "no interval"
const char* verdict_label(stats::Verdict verdict);

}  // namespace egm::analysis
