// The analysis as `egm analyze` prints it and as Markdown: the header, the main
// table, deltas, interaction, published numbers, parameters, exclusions and notes.
#include "analysis/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>

#include "analysis/analysis_json.h"
#include "analysis/grid_analysis.h"
#include "analysis/number_text.h"
#include "analysis/paper_table.h"
#include "analysis/table_cells.h"
#include "analysis/tables.h"
#include "db/table_format.h"
#include "util/enum_names.h"
#include "util/error.h"

namespace egm::analysis {

namespace {

using human::interval;
using human::loss;
using human::mean_pm;
using human::p_text;
using human::plain_interval;
using human::share;
using human::signed_loss;

std::string estimate_with_interval(const Estimate& e, double level) {
  // Without an interval, its reason instead of a range.
  if (!e.has_interval) return fmt::format("{}  (no interval: one seed)", signed_loss(e.estimate));
  return fmt::format("{}  {} CI {}", signed_loss(e.estimate), percent(level), interval(e.ci_low, e.ci_high));
}

using cells::str;

// Every line of `text` with `prefix` before it, each ending in a newline (a last line without one gets one).
std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(pos, end - pos) + "\n";
    // Past the text's last newline, pos reaches its end: no empty last line is added.
    pos = end + 1;
  }
  return out;
}

std::string text_table(const db::Table& t, int digits = 5) {
  db::FormatOptions o;
  o.float_digits = digits;
  // NULL prints as "-", as in the Markdown tables.
  o.null_text = "-";
  return db::format_table(t, db::Format::table, o);
}

std::string md_table(const db::Table& t, int digits = 5) {
  db::FormatOptions o;
  o.float_digits = digits;
  o.null_text = "-";
  return markdown_table(t, o);
}

// ---- pieces shared by text and Markdown ---------------------------------------------

std::string exclusion_summary(const SweepAnalysis& a) {
  std::string s = fmt::format("cells: {} of {} used (status done with {})", a.cells_used, a.cells_total,
                              metric_name(a.metric));
  if (a.excluded.empty()) return s;
  std::map<std::string, size_t> by_status;  // counted per status, named in a fixed (alphabetical) order
  for (const auto& e : a.excluded) ++by_status[e.status];
  std::vector<std::string> parts;
  for (const auto& [status, n] : by_status) parts.push_back(fmt::format("{} {}", n, status));
  return s + fmt::format("; {} excluded ({})", a.excluded.size(), fmt::join(parts, ", "));
}

std::string header(const SweepAnalysis& a) {
  std::string s = fmt::format("sweep {}: {}\n", a.sweep, metric_description(a.metric));
  s += fmt::format("{} Student-t intervals over seeds", percent(a.level));
  if (!a.baseline.empty())
    // The sign convention stated once, in the header every table below follows.
    s += fmt::format("; delta = {} - variant (positive = better than {})", a.baseline, a.baseline);
  s += "\n" + exclusion_summary(a) + "\n";
  return s;
}

// The method in a few words for the delta lines; without an interval the full text says why there is none.
std::string short_method(const DeltaResult& d) {
  if (!d.delta.has_interval) return d.method;
  // Paired: the shared seed count; Welch: its fractional df.
  if (d.paired) return fmt::format("paired over {} seeds", d.seeds.size());
  return fmt::format("Welch, df {:.3g}", d.delta.df);
}

std::string interaction_lines(const SweepAnalysis& a, const InteractionAnalysis& ia) {
  const Factors& f = ia.factors;
  const stats::InteractionResult& r = ia.result;
  std::string s;
  const std::vector<std::string> names{f.a, f.b, f.ab};
  size_t width = 0;
  // Names padded to the longest, so the "=" signs line up.
  for (const auto& n : names) width = std::max(width, n.size());
  // Deltas with intervals when they are against the factors' base: the analysis's deltas are against its
  // baseline in its metric, and would not be the parts of I otherwise.
  const bool own_base = ia.metric == a.metric && a.baseline == f.base;
  for (const auto& n : names) {
    if (const DeltaResult* d = own_base ? a.find_delta(n) : nullptr) {
      s += fmt::format("delta({}){} = {}  ({})\n", n, std::string(width - n.size(), ' '),
                       estimate_with_interval(d->delta, a.level), short_method(*d));
    }
  }
  // The sum of the parts beside I, which is delta(ab) minus that sum.
  s += fmt::format("sum of the parts delta({}) + delta({}) = {}\n", f.a, f.b,
                   estimate_with_interval(ia.sum_of_parts, a.level));
  s += fmt::format("interaction I = delta({}) - delta({}) - delta({}) = {}\n", f.ab, f.a, f.b,
                   signed_loss(r.estimate));
  if (r.interval.has_interval) {
    s += fmt::format("  {} t interval {} (df {:.3g}, n {})\n", percent(a.level),
                     interval(r.interval.ci_low, r.interval.ci_high), r.interval.df, r.n);
    // The bootstrap beside the t interval: a check that assumes no normality.
    if (r.has_bootstrap)
      s += fmt::format("  bootstrap {} {} ({} resamples over seeds, rng seed {})\n", percent(a.level),
                       interval(r.bootstrap.low, r.bootstrap.high), r.bootstrap.resamples, r.bootstrap.seed);
    // Losses are in nats: exp(I) is the interaction as a perplexity ratio.
    s += fmt::format("  perplexity ratio exp(I) = {:.4f}, {} {}\n", r.ratio_estimate, percent(a.level),
                     fmt::format("[{:.4f}, {:.4f}]", r.ratio_low, r.ratio_high));
    s += fmt::format("  method: {}\n", r.method);
  } else {
    s += fmt::format("  no interval exists: {}\n", r.method);
    s += fmt::format("  perplexity ratio exp(I) = {:.4f} (no interval)\n", r.ratio_estimate);
  }
  s += fmt::format("verdict: {}\n", ia.verdict_text);
  if (a.published && a.published->published_interaction) {
    const PublishedComparison& p = *a.published;
    std::string where = "no interval to compare with";
    // Inside or outside only where our interval exists.
    if (p.our_interaction && p.our_interaction->result.interval.has_interval)
      where = p.interaction_inside ? "inside our interval" : "outside our interval";
    std::string ours;
    // Published numbers of another metric: our estimate on that metric is named beside them.
    if (p.metric != a.metric && p.our_interaction)
      ours = fmt::format(" (ours on {}: {})", metric_name(p.metric), signed_loss(p.our_interaction->result.estimate));
    s += fmt::format("published I = {} ({}){}: {}\n", signed_loss(*p.published_interaction),
                     p.source.empty() ? "published values" : p.source, ours, where);
  }
  return s;
}

// ---- sections as (title, table) -------------------------------------------------------

db::Table human_summary_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "attention", "position", "metric", "n", "mean", "SD", fmt::format("{} CI", percent(a.level))};
  for (const auto& v : a.variants)
    for (const auto& m : v.metrics) {
      const stats::Summary& s = m.summary;
      // A metric no cell measured gets no row.
      if (s.n == 0) continue;
      t.rows.push_back({str(v.variant), str(v.attention), str(v.position), str(metric_name(m.metric)),
                        // One seed has no SD: "-" rather than a misleading number.
                        db::Value(static_cast<int64_t>(s.n)), str(loss(s.mean)), str(s.n > 1 ? loss(s.sd) : "-"),
                        str(s.has_interval ? plain_interval(s.ci_low, s.ci_high) : "no interval (1 seed)")});
    }
  return t;
}

db::Table human_delta_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "n", "delta", fmt::format("{} CI", percent(a.level)), "p (t)", "p (Holm)", "Wilcoxon V",
               "Wilcoxon p", "method"};
  for (const auto& d : a.deltas)
    t.rows.push_back({str(d.variant), db::Value(static_cast<int64_t>(d.delta.n)), str(signed_loss(d.delta.estimate)),
                      str(d.delta.has_interval ? interval(d.delta.ci_low, d.delta.ci_high) : "no interval"),
                      str(p_text(d.p)), str(p_text(d.p_holm)),
                      // Method none: every difference was zero, so there is no V to show.
                      str(d.has_wilcoxon && d.wilcoxon.method != stats::WilcoxonMethod::none
                              ? fmt::format("{:g}", d.wilcoxon.v)
                              : "-"),
                      str(d.has_wilcoxon ? p_text(d.wilcoxon.p) : "-"), str(d.method)});
  return t;
}

db::Table human_published_table(const SweepAnalysis& a) {
  const PublishedComparison& p = *a.published;
  db::Table t;
  const std::string pct = percent(a.level);
  t.columns = {"variant", "published", "ours", "in CI", fmt::format("{} prediction (1 seed)", pct), "in pred.",
               "published delta", "our delta CI", "in"};
  for (const auto& r : p.rows) {
    t.rows.push_back(
        {str(r.variant), str(loss(r.published)), str(mean_pm(r.ours)),
         // "in CI" and "in pred." only with an interval; one seed says neither.
         str(r.has_interval ? (r.inside_ci ? "yes" : "no") : "-"),
         str(r.has_interval ? plain_interval(r.prediction_low, r.prediction_high) : "-"),
         str(r.has_interval ? (r.inside_prediction ? "yes" : "no") : "-"),
         str(r.published_delta ? signed_loss(*r.published_delta) : "-"),
         str(r.our_delta ? (r.our_delta->has_interval ? interval(r.our_delta->ci_low, r.our_delta->ci_high)
                                                      : signed_loss(r.our_delta->estimate) + " (no interval)")
                         : "-"),
         str(r.our_delta && r.our_delta->has_interval ? (r.delta_inside ? "yes" : "no") : "-")});
  }
  return t;
}

db::Table human_mope_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"run",         "step",    "pairs",   "<1/char/word/clause/sent",  "at init", "on ω·σ=5", "at init ",
               "move (log) median/max", "σ/σ0 median", "k gap/BIC/silh.", "k init"};
  for (const auto& r : a.params.mope) {
    // The five counts in sigma_region's order: below 1, character, word, clause, sentence.
    auto regions = [](const std::array<std::size_t, 5>& x) {
      return fmt::format("{}/{}/{}/{}/{}", x[0], x[1], x[2], x[3], x[4]);
    };
    t.rows.push_back(
        {str(r.key), db::Value(r.step), db::Value(static_cast<int64_t>(r.pairs.size())), str(regions(r.regions)),
         str(r.has_init ? regions(r.regions_init) : "-"), str(share(r.boundary_share)),
         str(share(r.boundary_share_init)),
         str(r.has_init ? fmt::format("{:.3f}/{:.3f}", r.move_median, r.move_max) : "-"),
         str(r.has_init ? fmt::format("{:.3f}", r.sigma_ratio_median) : "-"),
         str(r.clustered ? fmt::format("{}/{}/{}", r.clusters.gap_k, r.clusters.bic_k,
                                       // silhouette_k is 0 when no k >= 2 could be scored: "-".
                                       r.clusters.silhouette_k ? std::to_string(r.clusters.silhouette_k) : "-")
                         : "-"),
         str(r.clustered_init ? std::to_string(r.clusters_init.gap_k) : "-")});
  }
  return t;
}

// One row per run and point set: the chosen k by each criterion and the gap
// statistic for every k (the chosen one in brackets); tables.h has every score.
db::Table human_k_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"run", "pairs", "k gap/BIC/silh.", "Gap(k) for k = 1, 2, ... ([chosen])"};
  auto add = [&](const std::string& run, const char* which, const stats::KSelection& k) {
    std::vector<std::string> gaps;
    for (const auto& score : k.scores)
      // The chosen k's gap in brackets, the rest plain.
      gaps.push_back(score.k == k.gap_k ? fmt::format("[{:.2f}]", score.gap) : fmt::format("{:.2f}", score.gap));
    t.rows.push_back({str(run), str(which),
                      str(fmt::format("{}/{}/{}", k.gap_k, k.bic_k,
                                      k.silhouette_k ? std::to_string(k.silhouette_k) : "-")),
                      str(fmt::format("{}", fmt::join(gaps, " ")))});
  };
  for (const auto& r : a.params.mope) {
    if (r.clustered) add(r.key, "learned", r.clusters);
    if (r.clustered_init) add(r.key, "init", r.clusters_init);
  }
  return t;
}

using Section = ReportSection;

std::vector<Section> sections(const SweepAnalysis& a) {
  std::vector<Section> out;
  out.push_back({"Per variant", "Mean, sample SD and Student-t interval of each measured metric over seeds.",
                 human_summary_table(a), 5, "summary"});
  if (!a.deltas.empty())
    out.push_back({fmt::format("Deltas against {} ({})", a.baseline, metric_name(a.metric)),
                   "delta = baseline - variant, positive = better. Paired over shared seeds (t interval on per-seed "
                   "differences, Wilcoxon signed-rank), Welch when the variants share fewer than two seeds; p (Holm) "
                   "adjusts the t-test p-values over the variants compared.",
                   human_delta_table(a), 5, "deltas"});
  if (a.published)
    out.push_back({fmt::format("Published numbers ({})", metric_name(a.published->metric)),
                   fmt::format("Source: {}. The paper reports one seed, so 'in pred.' (where a new seed would fall: "
                               "mean ± t·SD·sqrt(1+1/n)) is the fairer check than 'in CI' (where the mean is).",
                               a.published->source),
                   human_published_table(a), 5, "published"});
  if (!a.excluded.empty())
    out.push_back({"Excluded cells", "Only cells with status done and a value of the metric count.", excluded_table(a), 5, "excluded"});
  if (!a.setup_conflicts.empty())
    out.push_back({"WARNING: paired cells ran with different setups",
                   "--allow-mixed-world-size or --allow-mixed-device was given; these comparisons mix world sizes, "
                   "backends or devices.",
                   setup_conflict_table(a), 5, "conflicts"});
  if (!a.provenance.empty())
    out.push_back({"WARNING: compared cells were trained by different code",
                   "Different egm commits, source modifications (diff sha256; `egm runs --show-diff CELL` prints "
                   "one), LibTorch versions or devices trained the cells of these comparisons: a difference may be "
                   "the code's, not the model's.",
                   provenance_table(a), 5, "provenance"});
  if (!a.reused.empty())
    out.push_back({"Cells reused from earlier runs",
                   "These cells were not trained by this sweep: each took the results, curves and parameters of a "
                   "finished run of the same identity (run config, corpus, device kind, world size, numerics "
                   "version) elsewhere in the database. `egm sweep --no-reuse` trains them.",
                   reused_table(a), 5, "reused"});
  if (!a.params.mope.empty()) {
    out.push_back({"MoPE (omega, sigma) per run",
                   fmt::format("Sigma regions: below 1, character [1,6), word [6,20), clause [20,55), sentence >= 55. "
                               "On the boundary: |omega*sigma/5 - 1| <= {:g}. Move: distance in (log omega, log sigma) "
                               "from initialisation. k: clusters of (log omega, log sigma) chosen by the gap statistic "
                               "/ BIC / silhouette (k init: the same on the initial pairs, a control).",
                               a.params.boundary_tolerance),
                   human_mope_table(a), 5, "mope_runs"});
    std::string sampled;  // variants whose runs were not all clustered (--cluster-runs)
    // Named in the intro only for a variant whose runs were sampled, with how many of how many.
    for (const ClusterSample& c : a.params.cluster_samples)
      if (c.clustered < c.runs)
        sampled += fmt::format("{}{}: {} of {} runs", sampled.empty() ? "" : ", ", c.variant, c.clustered, c.runs);
    out.push_back({"MoPE k-means: gap statistic per k",
                   "k-means of (log omega, log sigma), k = 1..8, seeded; the gap statistic (Tibshirani et al. 2001, "
                   "first-SE-max rule) can choose k = 1. Every score (within-SS, gap, BIC, silhouette) is in the "
                   "report's mope_k_scores.csv and in the JSON." +
                       (sampled.empty() ? std::string()
                                        : fmt::format(" Clustered: a sample evenly spaced in seed order ({}; "
                                                      "--cluster-runs all for every run).",
                                                      sampled)),
                   human_k_table(a), 5, "mope_k_scores"});
  }
  if (!a.params.gates.empty())
    out.push_back({"Gate parameters per layer (over heads)",
                   "Per layer: the mean over heads of each head's mean over seeds, with the lowest and highest head.",
                   gate_layer_table(a), 4, "gates_by_layer"});
  return out;
}


}  // namespace

std::vector<ReportSection> report_sections(const SweepAnalysis& a) { return sections(a); }

std::string render_interaction_lines(const SweepAnalysis& a) {
  return a.interaction ? interaction_lines(a, *a.interaction) : std::string();
}

std::vector<std::string> all_notes(const SweepAnalysis& a) {
  std::vector<std::string> notes = a.notes;
  if (!a.interaction && !a.no_interaction_reason.empty()) notes.push_back("no interaction: " + a.no_interaction_reason);
  // The parameter analysis's notes follow the sweep's own.
  notes.insert(notes.end(), a.params.notes.begin(), a.params.notes.end());
  return notes;
}

OutputFormat parse_output_format(std::string_view name) {
  constexpr const char* kNames[] = {"table", "csv", "json", "markdown"};  // in enum order
  return parse_enum<OutputFormat, ConfigError>(name, kNames, "format");
}

std::string render_main_table(const SweepAnalysis& a) {
  std::string s = header(a) + "\n";
  const PaperTable paper = build_paper_table(a);
  // With an interaction, the 2x2 as a grid and its lines; otherwise one row per variant.
  if (a.interaction) {
    s += indent(text_table(paper_text_grid(paper)), "  ");
    s += "\n";
    s += indent(interaction_lines(a, *a.interaction), "  ");
  } else {
    s += indent(text_table(paper_text_variants(paper)), "  ");
    if (!a.no_interaction_reason.empty()) s += fmt::format("  no interaction: {}\n", a.no_interaction_reason);
  }
  if (!a.setup_conflicts.empty())
    s += fmt::format("  WARNING: {} comparisons pair cells run with different world sizes, backends or devices "
                     "(--allow-mixed-world-size, --allow-mixed-device)\n",
                     a.setup_conflicts.size());
  for (const ProvenanceMix& m : a.provenance) s += "  WARNING: trained by different code: " + m.text() + "\n";
  // Empty when no cell was reused: then no line at all.
  if (const std::string line = db::reuse_line(a.reused, static_cast<int64_t>(a.cells_total)); !line.empty())
    s += "  " + line + " (egm runs --sweep " + a.sweep + " says which)\n";
  return s;
}

std::string render_main_table(db::ResultsDb& db, const std::string& sweep, const AnalysisOptions& options) {
  AnalysisOptions o = options;
  o.analyse_params = false;  // the headline needs no parameters
  return render_main_table(analyze_sweep(db, sweep, o));
}

std::string render_headline(const SweepData& data, const AnalysisOptions& options) {
  AnalysisOptions o = options;
  o.analyse_params = false;  // the headline needs no parameters
  // A grid's headline is each point's, then the across-points table: cells of different points never pair.
  if (!has_grid(data)) return render_main_table(analyze_sweep(data, o));
  return render_grid_text(analyze_grid(data, o), [](const SweepAnalysis& a) { return render_main_table(a); });
}

std::string render_headline(db::ResultsDb& db, const std::string& sweep, const AnalysisOptions& options) {
  return render_headline(load_sweep(db, sweep, /*with_params=*/false), options);
}

std::string render_text(const SweepAnalysis& a) {
  std::string s = render_main_table(a);
  for (const auto& sec : sections(a)) {
    s += fmt::format("\n{}\n", sec.title);
    if (!sec.intro.empty()) s += indent(sec.intro, "  ");
    // Each section's table indented under its title and intro.
    s += indent(text_table(sec.table, sec.digits), "  ");
  }
  const std::vector<std::string> notes = all_notes(a);
  if (!notes.empty()) {
    s += "\nNotes\n";
    for (const auto& n : notes) s += "  - " + n + "\n";
  }
  return s;
}

std::string render_markdown_main(const SweepAnalysis& a) { return paper_markdown(build_paper_table(a)); }

std::string render_markdown(const SweepAnalysis& a) {
  std::string s = fmt::format("# Sweep `{}`\n\n", a.sweep);
  if (!a.description.empty()) s += a.description + "\n\n";
  s += fmt::format("Metric: `{}`, {}. {} Student-t intervals over seeds", metric_name(a.metric),
                   metric_description(a.metric), percent(a.level));
  if (!a.baseline.empty()) s += fmt::format("; delta = {} − variant (positive = better)", a.baseline);
  s += ".\n\n" + exclusion_summary(a) + ".\n\n";
  s += "## Main table\n\n" + render_markdown_main(a) + "\n";
  // The interaction's lines in a code block, which keeps their alignment; without one, its reason.
  if (a.interaction) s += "```\n" + interaction_lines(a, *a.interaction) + "```\n";
  else if (!a.no_interaction_reason.empty()) s += "No interaction: " + a.no_interaction_reason + ".\n";
  for (const auto& sec : sections(a)) {
    s += fmt::format("\n## {}\n\n", sec.title);
    if (!sec.intro.empty()) s += sec.intro + "\n\n";
    s += md_table(sec.table, sec.digits);
  }
  // Per head only in Markdown; the text form keeps to the per-layer summary of sections().
  if (!a.params.gates.empty()) {
    s += "\n## Gate parameters per layer and head\n\nMean and SD over seeds at the last step; init_mean at step 0.\n\n";
    s += md_table(gate_table(a), 4);
  }
  const std::vector<std::string> notes = all_notes(a);
  if (!notes.empty()) {
    s += "\n## Notes\n\n";
    for (const auto& n : notes) s += "- " + n + "\n";
  }
  return s;
}

std::string render_latex_main(const SweepAnalysis& a) { return paper_latex(build_paper_table(a)); }

std::string render_analysis(const SweepAnalysis& a, OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return render_text(a);
    case OutputFormat::markdown: return render_markdown(a);
    // CSV is one table: the paper's, with full-precision numbers.
    case OutputFormat::csv: return db::format_table(paper_table(a), db::Format::csv);
    case OutputFormat::json: return to_json(a).dump(2) + "\n";
  }
  return "";
}

}  // namespace egm::analysis
