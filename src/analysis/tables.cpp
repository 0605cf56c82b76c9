// The analysis as db::Tables, one per section (summary, per seed, deltas,
// interaction, published, exclusions, MoPE, gates), every number at full precision.
#include "analysis/tables.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "analysis/paper_table.h"
#include "analysis/table_cells.h"

namespace egm::analysis {

namespace {

using cells::num;
using cells::opt_num;
db::Value count(std::size_t n) { return db::Value(static_cast<int64_t>(n)); }
db::Value text(const std::string& s) { return db::Value(s); }
db::Value yes_no(bool b) { return db::Value(std::string(b ? "yes" : "no")); }

// Space-separated: a CSV field holds the whole list, and a reader splits it on blanks.
std::string seeds_text(const std::vector<int64_t>& seeds) { return fmt::format("{}", fmt::join(seeds, " ")); }

}  // namespace

db::Table paper_table(const SweepAnalysis& a) { return paper_number_table(build_paper_table(a)); }

db::Table summary_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "metric", "n", "mean", "sd", "se", "t_crit", "ci_low", "ci_high", "setups"};
  for (const auto& v : a.variants)
    for (const auto& m : v.metrics) {
      // A metric no cell of the variant measured gets no row, rather than a row of empty fields.
      if (m.summary.n == 0) continue;
      const stats::Summary& s = m.summary;
      std::vector<std::string> setups;
      for (const auto& x : m.setups) setups.push_back(x.text());
      t.rows.push_back({text(v.variant), text(metric_name(m.metric)), count(s.n), num(s.mean), num(s.sd), num(s.se),
                        num(s.t_crit), num(s.ci_low), num(s.ci_high), text(fmt::format("{}", fmt::join(setups, "; ")))});
    }
  return t;
}

db::Table per_seed_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "seed"};
  for (Metric m : all_metrics()) t.columns.push_back(metric_name(m));
  for (const auto& v : a.variants) {
    // One row per seed across the metrics: a metric a seed lacks stays an empty field.
    std::map<int64_t, std::vector<db::Value>> rows;
    for (const auto& m : v.metrics)
      for (const auto& [seed, value] : m.by_seed) {
        auto& row = rows[seed];
        // Empty fields first: a seed can have final_val but not ar_val.
        if (row.empty()) row.assign(all_metrics().size(), db::Value());
        row[static_cast<size_t>(m.metric.index())] = num(value);  // Metric's order is the columns'
      }
    for (auto& [seed, values] : rows) {
      std::vector<db::Value> row{text(v.variant), db::Value(seed)};
      row.insert(row.end(), values.begin(), values.end());
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

db::Table delta_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "baseline", "metric", "paired", "n",       "delta",    "se",      "df",
               "ci_low",  "ci_high",  "p",      "p_holm", "wilcoxon_v", "wilcoxon_p", "wilcoxon_method",
               "seeds",   "per_seed", "unmatched_seeds", "method"};
  for (const auto& d : a.deltas) {
    std::vector<std::string> per_seed;
    // Seeds and per-seed contrasts as space-separated text, one cell each, in the same order.
    for (double x : d.per_seed) per_seed.push_back(fmt::format("{:.17g}", x));  // 17 digits: reads back to the same double
    t.rows.push_back({text(d.variant), text(a.baseline), text(metric_name(d.metric)), yes_no(d.paired),
                      count(d.delta.n), num(d.delta.estimate), num(d.delta.se), num(d.delta.df), num(d.delta.ci_low),
                      // Wilcoxon fields only for a paired delta; Welch has none.
                      num(d.delta.ci_high), num(d.p), num(d.p_holm), d.has_wilcoxon ? num(d.wilcoxon.v) : db::Value(),
                      d.has_wilcoxon ? num(d.wilcoxon.p) : db::Value(),
                      d.has_wilcoxon ? text(stats::wilcoxon_method_name(d.wilcoxon.method)) : db::Value(),
                      text(seeds_text(d.seeds)), text(fmt::format("{}", fmt::join(per_seed, " "))),
                      text(seeds_text(d.unmatched_seeds)), text(d.method)});
  }
  return t;
}

db::Table interaction_table(const SweepAnalysis& a) {
  db::Table t;
  // Long form (quantity, value): the interaction's numbers are of different kinds, one row each.
  t.columns = {"quantity", "value"};
  if (!a.interaction) return t;
  const InteractionAnalysis& ia = *a.interaction;
  const stats::InteractionResult& r = ia.result;
  auto add = [&](const std::string& q, db::Value v) { t.rows.push_back({text(q), std::move(v)}); };
  add("a", text(ia.factors.a));
  add("b", text(ia.factors.b));
  add("ab", text(ia.factors.ab));
  add("base", text(ia.factors.base));
  add("metric", text(metric_name(ia.metric)));
  add("mean_base", num(r.mean_base));
  add("mean_a", num(r.mean_a));
  add("mean_b", num(r.mean_b));
  add("mean_ab", num(r.mean_ab));
  add("delta_a", num(r.delta_a));
  add("delta_b", num(r.delta_b));
  add("delta_ab", num(r.delta_ab));
  add("sum_of_parts", num(ia.sum_of_parts.estimate));
  add("sum_of_parts_low", num(ia.sum_of_parts.ci_low));
  add("sum_of_parts_high", num(ia.sum_of_parts.ci_high));
  add("estimate", num(r.estimate));
  add("se", num(r.interval.se));
  add("df", num(r.interval.df));
  add("ci_low", num(r.interval.ci_low));
  add("ci_high", num(r.interval.ci_high));
  add("p", num(r.interval.p));
  add("level", num(r.interval.level));
  add("paired", yes_no(r.paired));
  add("n", count(r.n));
  // Bootstrap fields only where it ran (paired, 2 or more seeds).
  add("bootstrap_low", r.has_bootstrap ? num(r.bootstrap.low) : db::Value());
  add("bootstrap_high", r.has_bootstrap ? num(r.bootstrap.high) : db::Value());
  add("bootstrap_resamples", r.has_bootstrap ? count(r.bootstrap.resamples) : db::Value());
  add("bootstrap_seed", r.has_bootstrap ? db::Value(static_cast<int64_t>(r.bootstrap.seed)) : db::Value());
  // exp of I and of its bounds: the perplexity ratio.
  add("ratio_estimate", num(r.ratio_estimate));
  add("ratio_low", num(r.ratio_low));
  add("ratio_high", num(r.ratio_high));
  add("verdict", text(verdict_label(r.verdict)));
  add("method", text(r.method));
  // The published I only when the spec publishes all four cells.
  if (a.published && a.published->published_interaction) {
    add("published", num(*a.published->published_interaction));
    add("published_inside", yes_no(a.published->interaction_inside));
  }
  return t;
}

db::Table published_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant",         "published",      "n",       "mean",          "ci_low",          "ci_high",
               "inside_ci",       "prediction_low", "prediction_high", "inside_prediction", "published_delta",
               "our_delta",       "delta_low",      "delta_high",      "delta_inside"};
  if (!a.published) return t;
  for (const auto& r : a.published->rows) {
    const bool measured = r.ours.n > 0;  // a published variant this sweep did not run: its number, no mean
    t.rows.push_back({text(r.variant), num(r.published), count(r.ours.n), measured ? num(r.ours.mean) : db::Value(),
                      num(r.ours.ci_low), num(r.ours.ci_high),
                      // inside or not only where there is an interval: one seed says neither
                      r.has_interval ? yes_no(r.inside_ci) : db::Value(), num(r.prediction_low),
                      num(r.prediction_high), r.has_interval ? yes_no(r.inside_prediction) : db::Value(),
                      opt_num(r.published_delta), r.our_delta ? num(r.our_delta->estimate) : db::Value(),
                      // our_delta: the variant's delta on the published metric, when one exists.
                      r.our_delta ? num(r.our_delta->ci_low) : db::Value(),
                      r.our_delta ? num(r.our_delta->ci_high) : db::Value(),
                      r.our_delta && r.our_delta->has_interval ? yes_no(r.delta_inside) : db::Value()});
  }
  return t;
}

db::Table excluded_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"cell", "variant", "seed", "status", "reason"};
  for (const auto& e : a.excluded)
    t.rows.push_back({text(e.key), text(e.variant), db::Value(e.seed), text(e.status), text(e.reason)});
  return t;
}

db::Table setup_conflict_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"comparison", "cells"};
  for (const auto& c : a.setup_conflicts) t.rows.push_back({text(c.comparison), text(c.detail)});
  return t;
}

db::Table reused_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"cell", "variant", "from", "original_run"};
  for (const db::ReusedCell& r : a.reused)
    t.rows.push_back({r.key, r.variant, r.from, r.original_run ? db::Value(*r.original_run) : db::Value()});
  return t;
}

db::Table provenance_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"comparisons", "egm", "diff_sha256", "libtorch", "device", "cells"};
  for (const ProvenanceMix& m : a.provenance)
    for (const ProvenanceGroup& g : m.groups)
      // One row per group: the comparisons sharing a mix repeat on each of its rows.
      t.rows.push_back({text(fmt::format("{}", fmt::join(m.comparisons, ", "))), text(g.provenance.commit),
                        text(g.provenance.diff_sha256), text(g.provenance.torch_version),
                        text(g.provenance.device_kind), text(fmt::format("{}", fmt::join(g.cells, ", ")))});
  return t;
}

db::Table mope_run_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"run",           "variant",         "seed",       "step",        "pairs",          "below_1",
               "character",     "word",            "clause",     "sentence",    "below_1_init",   "character_init",
               "word_init",     "clause_init",     "sentence_init", "on_boundary", "on_boundary_init",
               "move_median",   "move_max",        "sigma_ratio_median", "sigma_ratio_max", "k_gap", "k_bic",
               "k_silhouette",  "k_gap_init"};
  for (const auto& r : a.params.mope) {
    std::vector<db::Value> row{text(r.key), text(r.variant), db::Value(r.seed), db::Value(r.step), count(r.pairs.size())};
    // The five region counts in sigma_region's order, as the columns name them.
    for (auto n : r.regions) row.push_back(count(n));
    // The regions at step 0 only where the run recorded its initial pairs.
    for (auto n : r.regions_init) row.push_back(r.has_init ? count(n) : db::Value());
    // NaN shares and moves (no initial values) are written as empty fields.
    for (double x : {r.boundary_share, r.boundary_share_init, r.move_median, r.move_max, r.sigma_ratio_median,
                     r.sigma_ratio_max})
      row.push_back(num(x));
    // The k each criterion chose, only for a run the analysis clustered (ParamOptions::cluster_runs).
    row.push_back(r.clustered ? count(r.clusters.gap_k) : db::Value());
    row.push_back(r.clustered ? count(r.clusters.bic_k) : db::Value());
    // silhouette_k is 0 when no k >= 2 could be scored (stats::select_k): empty, not 0.
    row.push_back(r.clustered && r.clusters.silhouette_k ? count(r.clusters.silhouette_k) : db::Value());
    row.push_back(r.clustered_init ? count(r.clusters_init.gap_k) : db::Value());
    t.rows.push_back(std::move(row));
  }
  return t;
}

db::Table mope_pair_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"run",      "variant", "seed",        "idx",          "omega0", "sigma0", "region0", "on_boundary0",
               "omega",    "sigma",   "region",      "on_boundary",  "log_move", "sigma_ratio"};
  // Step-0 region and boundary only for a pair with initial values; omega0 and sigma0 are NaN (empty) otherwise.
  for (const auto& r : a.params.mope)
    for (const auto& p : r.pairs)
      t.rows.push_back({text(r.key), text(r.variant), db::Value(r.seed), db::Value(p.idx), num(p.omega0),
                        num(p.sigma0), p.has_init ? text(stats::sigma_region_name(p.region0)) : db::Value(),
                        p.has_init ? yes_no(p.on_boundary0) : db::Value(), num(p.omega), num(p.sigma),
                        text(stats::sigma_region_name(p.region)), yes_no(p.on_boundary), num(p.log_move),
                        num(p.sigma_ratio)});
  return t;
}

db::Table k_score_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"run", "pairs", "k", "within_ss", "gap", "gap_se", "bic", "silhouette", "chosen"};
  // One table for both fits of a run: `which` says learned or init.
  auto add = [&](const std::string& run, const std::string& which, const stats::KSelection& s) {
    for (const auto& k : s.scores) {
      std::vector<std::string> chosen;
      // A k chosen by several criteria names them all.
      if (k.k == s.gap_k) chosen.push_back("gap");
      if (k.k == s.bic_k) chosen.push_back("bic");
      if (k.k == s.silhouette_k) chosen.push_back("silhouette");
      t.rows.push_back({text(run), text(which), count(k.k), num(k.within_ss), num(k.gap), num(k.gap_se), num(k.bic),
                        num(k.silhouette), text(fmt::format("{}", fmt::join(chosen, " ")))});
    }
  };
  for (const auto& r : a.params.mope) {
    // Both fits of a run: the learned pairs, and the initial ones as a control.
    if (r.clustered) add(r.key, "learned", r.clusters);
    if (r.clustered_init) add(r.key, "init", r.clusters_init);
  }
  return t;
}

db::Table gate_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "module", "layer", "head", "name", "n", "mean", "sd", "min", "max", "init_mean"};
  for (const auto& g : a.params.gates)
    t.rows.push_back({text(g.variant), text(g.module), db::Value(g.layer), db::Value(g.idx), text(g.name), count(g.n),
                      num(g.mean), num(g.sd), num(g.min), num(g.max), num(g.init_mean)});
  return t;
}

db::Table gate_layer_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "module", "layer", "name", "heads", "seeds", "mean", "lowest_head", "highest_head",
               "init_mean"};
  struct Acc {
    std::string variant;
    std::vector<double> means;  // per head: the mean over seeds
    std::size_t seeds = 0;
    std::vector<double> init;
  };
  // Gates arrive in spec order of variants; keep it, then module, name, layer.
  std::vector<std::string> variants;
  std::map<std::tuple<std::size_t, std::string, std::string, int64_t>, Acc> acc;
  for (const auto& g : a.params.gates) {
    auto it = std::find(variants.begin(), variants.end(), g.variant);
    if (it == variants.end()) it = variants.insert(variants.end(), g.variant);
    // The variant's first-seen index leads the key, so the map keeps the variants' order.
    Acc& x = acc[std::make_tuple(static_cast<std::size_t>(it - variants.begin()), g.module, g.name, g.layer)];
    x.variant = g.variant;
    x.means.push_back(g.mean);
    // The most seeds any head had: a head can be missing from some seeds.
    x.seeds = std::max(x.seeds, g.n);
    // Only heads with a recorded step-0 value enter the initial mean.
    if (g.has_init) x.init.push_back(g.init_mean);
  }
  auto mean_of = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    // No values (no initial ones recorded): NaN, which num() writes as an empty field.
    return v.empty() ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(v.size());
  };
  // Key order: variant (first seen), module, name, layer.
  for (const auto& [key, x] : acc)
    t.rows.push_back({text(x.variant), text(std::get<1>(key)), db::Value(std::get<3>(key)), text(std::get<2>(key)),
                      count(x.means.size()), count(x.seeds), num(mean_of(x.means)),
                      // The spread over heads: the lowest and the highest per-head mean.
                      num(*std::min_element(x.means.begin(), x.means.end())),
                      num(*std::max_element(x.means.begin(), x.means.end())), num(mean_of(x.init))});
  return t;
}

std::string markdown_table(const db::Table& table, const db::FormatOptions& options) {
  auto cell = [&](const db::Value& v) {
    // value_text with the caller's options: the same number formats as the text tables.
    std::string s = db::value_text(v, options);
    std::string out;
    for (char c : s) {
      // A '|' would end the Markdown cell and a newline the row.
      if (c == '|') out += "\\|";
      else if (c == '\n') out += ' ';
      else out += c;
    }
    return out;
  };
  std::string md = "|";
  for (const auto& c : table.columns) md += " " + c + " |";
  md += "\n|";
  // The delimiter row Markdown requires under the header.
  for (size_t i = 0; i < table.columns.size(); ++i) md += "---|";
  md += "\n";
  for (const auto& row : table.rows) {
    md += "|";
    for (const auto& v : row) md += " " + cell(v) + " |";
    md += "\n";
  }
  return md;
}

}  // namespace egm::analysis
