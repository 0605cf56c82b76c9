// The analysis as flat tables (db::Table), one per section, with full-
// precision numbers: for CSV files, Markdown and aligned text. NaN (no
// interval, not measured) becomes NULL, i.e. an empty CSV field.
#pragma once

#include <string>

#include "analysis/sweep_analysis.h"
#include "db/table_format.h"

namespace egm::analysis {

// The paper's layout, one row per variant and a final "interaction" row:
// variant, attention, position, n, mean, sd, ci_low, ci_high, delta,
// delta_low, delta_high, p, p_holm, wilcoxon_p, method, published,
// published_delta. The interaction row carries I in the delta columns and the
// published interaction in published_delta.
db::Table paper_table(const SweepAnalysis& a);
// Every variant x metric that was measured: variant, metric, n, mean, sd, se, t_crit, ci_low, ci_high.
db::Table summary_table(const SweepAnalysis& a);
// Per seed: variant, seed and each analysable measurement (all_metrics(): final_val, ...).
db::Table per_seed_table(const SweepAnalysis& a);
// The deltas against the baseline with their method, per-seed values and tests.
db::Table delta_table(const SweepAnalysis& a);
// The interaction's numbers as rows of (quantity, value): empty without one.
db::Table interaction_table(const SweepAnalysis& a);
db::Table published_table(const SweepAnalysis& a);
db::Table excluded_table(const SweepAnalysis& a);
db::Table setup_conflict_table(const SweepAnalysis& a);
// One row per comparison group and provenance (SweepAnalysis::provenance).
db::Table provenance_table(const SweepAnalysis& a);
// The cells that reused a finished run (db/reuse.h): cell, variant, from, original_run.
db::Table reused_table(const SweepAnalysis& a);
// MoPE: one row per run (regions, boundary shares, movement, chosen k).
db::Table mope_run_table(const SweepAnalysis& a);
// MoPE: one row per pair and run (init and learned omega, sigma, region, boundary, movement).
db::Table mope_pair_table(const SweepAnalysis& a);
// MoPE: per run, per k: within_ss, gap, gap_se, bic, silhouette (learned and init pairs).
db::Table k_score_table(const SweepAnalysis& a);
// Gate parameters per variant, module, layer, head and name over seeds.
db::Table gate_table(const SweepAnalysis& a);
// Gate parameters per variant, module, layer and name, summarised over heads
// (mean of the per-head seed means, smallest and largest head mean).
db::Table gate_layer_table(const SweepAnalysis& a);

// A GitHub-flavoured Markdown table (pipes in cells escaped).
std::string markdown_table(const db::Table& table, const db::FormatOptions& options = {});

}  // namespace egm::analysis
