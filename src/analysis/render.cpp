#include "analysis/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>

#include "analysis/tables.h"
#include "db/table_format.h"
#include "util/error.h"

namespace egm::analysis {

namespace {

using nlohmann::json;

// ---- numbers for people --------------------------------------------------------

std::string loss(double x) { return std::isfinite(x) ? fmt::format("{:.4f}", x) : "-"; }
std::string signed_loss(double x) { return std::isfinite(x) ? fmt::format("{:+.4f}", x) : "-"; }
std::string interval(double low, double high) { return fmt::format("[{}, {}]", signed_loss(low), signed_loss(high)); }
std::string plain_interval(double low, double high) { return fmt::format("[{}, {}]", loss(low), loss(high)); }
std::string p_text(double p) {
  if (!std::isfinite(p)) return "-";
  return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.3g}", p);
}
std::string share(double x) { return std::isfinite(x) ? fmt::format("{:.0f}%", 100.0 * x) : "-"; }

// "1.5000 ± 0.0497 (3)", "1.5000 (1 seed, no interval)", "not measured".
std::string mean_pm(const stats::Summary& s) {
  if (s.n == 0) return "not measured";
  if (!s.has_interval) return fmt::format("{} (1 seed, no interval)", loss(s.mean));
  return fmt::format("{} ± {} ({})", loss(s.mean), loss(s.ci_high - s.mean), s.n);
}

std::string delta_pm(const Estimate& e) {
  if (!e.has_interval) return fmt::format("{} (no interval)", signed_loss(e.estimate));
  return fmt::format("{} ± {}", signed_loss(e.estimate), loss(e.ci_high - e.estimate));
}

std::string estimate_with_interval(const Estimate& e, double level) {
  if (!e.has_interval) return fmt::format("{}  (no interval: one seed)", signed_loss(e.estimate));
  return fmt::format("{}  {} CI {}", signed_loss(e.estimate), percent(level), interval(e.ci_low, e.ci_high));
}

db::Value str(std::string s) { return db::Value(std::move(s)); }

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(pos, end - pos) + "\n";
    pos = end + 1;
  }
  return out;
}

std::string text_table(const db::Table& t, int digits = 5) {
  db::FormatOptions o;
  o.float_digits = digits;
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
  std::map<std::string, size_t> by_status;
  for (const auto& e : a.excluded) ++by_status[e.status];
  std::vector<std::string> parts;
  for (const auto& [status, n] : by_status) parts.push_back(fmt::format("{} {}", n, status));
  return s + fmt::format("; {} excluded ({})", a.excluded.size(), fmt::join(parts, ", "));
}

std::string header(const SweepAnalysis& a) {
  std::string s = fmt::format("sweep {}: {}\n", a.sweep, metric_description(a.metric));
  s += fmt::format("{} Student-t intervals over seeds", percent(a.level));
  if (!a.baseline.empty())
    s += fmt::format("; delta = {} - variant (positive = better than {})", a.baseline, a.baseline);
  s += "\n" + exclusion_summary(a) + "\n";
  return s;
}

// The 2x2 grid: rows = attention of base / a, columns = position of base / b.
db::Table grid(const SweepAnalysis& a, const InteractionAnalysis& ia) {
  const Factors& f = ia.factors;
  const VariantSummary* base = a.find_variant(f.base);
  const VariantSummary* va = a.find_variant(f.a);
  const VariantSummary* vb = a.find_variant(f.b);
  const VariantSummary* vab = a.find_variant(f.ab);
  auto label = [](const VariantSummary* v, bool attention, const std::string& fallback) {
    const std::string& s = attention ? v->attention : v->position;
    return s == "?" ? fallback : s;
  };
  db::Table t;
  t.columns = {"", label(base, false, f.base + "'s"), label(vb, false, f.b + "'s")};
  auto cell = [&](const VariantSummary* v) { return str(fmt::format("{}: {}", v->variant, mean_pm(v->at(ia.metric).summary))); };
  t.rows.push_back({str(label(base, true, f.base + "'s")), cell(base), cell(vb)});
  t.rows.push_back({str(label(va, true, f.a + "'s")), cell(va), cell(vab)});
  return t;
}

std::string short_method(const DeltaResult& d) {
  if (!d.delta.has_interval) return d.method;
  if (d.paired) return fmt::format("paired over {} seeds", d.seeds.size());
  return fmt::format("Welch, df {:.3g}", d.delta.df);
}

std::string interaction_lines(const SweepAnalysis& a, const InteractionAnalysis& ia) {
  const Factors& f = ia.factors;
  const stats::InteractionResult& r = ia.result;
  std::string s;
  const std::vector<std::string> names{f.a, f.b, f.ab};
  size_t width = 0;
  for (const auto& n : names) width = std::max(width, n.size());
  // Deltas with intervals when they are against the factors' base.
  const bool own_base = ia.metric == a.metric && a.baseline == f.base;
  for (const auto& n : names) {
    if (const DeltaResult* d = own_base ? a.find_delta(n) : nullptr) {
      s += fmt::format("delta({}){} = {}  ({})\n", n, std::string(width - n.size(), ' '),
                       estimate_with_interval(d->delta, a.level), short_method(*d));
    }
  }
  s += fmt::format("sum of the parts delta({}) + delta({}) = {}\n", f.a, f.b,
                   estimate_with_interval(ia.sum_of_parts, a.level));
  s += fmt::format("interaction I = delta({}) - delta({}) - delta({}) = {}\n", f.ab, f.a, f.b,
                   signed_loss(r.estimate));
  if (r.interval.has_interval) {
    s += fmt::format("  {} t interval {} (df {:.3g}, n {})\n", percent(a.level),
                     interval(r.interval.ci_low, r.interval.ci_high), r.interval.df, r.n);
    if (r.has_bootstrap)
      s += fmt::format("  bootstrap {} {} ({} resamples over seeds, rng seed {})\n", percent(a.level),
                       interval(r.bootstrap.low, r.bootstrap.high), r.bootstrap.resamples, r.bootstrap.seed);
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
    if (p.our_interaction && p.our_interaction->result.interval.has_interval)
      where = p.interaction_inside ? "inside our interval" : "outside our interval";
    std::string ours;
    if (p.metric != a.metric && p.our_interaction)
      ours = fmt::format(" (ours on {}: {})", metric_name(p.metric), signed_loss(p.our_interaction->result.estimate));
    s += fmt::format("published I = {} ({}){}: {}\n", signed_loss(*p.published_interaction),
                     p.source.empty() ? "published values" : p.source, ours, where);
  }
  return s;
}

// Variant rows with deltas (used when there are no 2x2 factors).
db::Table variant_delta_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "n", "mean ± half-width", "delta", fmt::format("{} CI", percent(a.level)), "p (Holm)",
               "method"};
  for (const auto& v : a.variants) {
    const stats::Summary& s = v.at(a.metric).summary;
    const DeltaResult* d = a.find_delta(v.variant);
    t.rows.push_back({str(v.variant), db::Value(static_cast<int64_t>(s.n)), str(mean_pm(s)),
                      str(d ? signed_loss(d->delta.estimate) : v.variant == a.baseline ? "baseline" : "-"),
                      str(d && d->delta.has_interval ? interval(d->delta.ci_low, d->delta.ci_high)
                                                     : d ? "no interval" : "-"),
                      str(d ? p_text(d->p_holm) : "-"), str(d ? d->method : "")});
  }
  return t;
}

// ---- sections as (title, table) -------------------------------------------------------

db::Table human_summary_table(const SweepAnalysis& a) {
  db::Table t;
  t.columns = {"variant", "attention", "position", "metric", "n", "mean", "SD", fmt::format("{} CI", percent(a.level))};
  for (const auto& v : a.variants)
    for (const auto& m : v.metrics) {
      const stats::Summary& s = m.summary;
      if (s.n == 0) continue;
      t.rows.push_back({str(v.variant), str(v.attention), str(v.position), str(metric_name(m.metric)),
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

struct Section {
  std::string title;
  std::string intro;  // may be empty
  db::Table table;
  int digits = 5;
};

std::vector<Section> sections(const SweepAnalysis& a) {
  std::vector<Section> out;
  out.push_back({"Per variant", "Mean, sample SD and Student-t interval of each measured metric over seeds.",
                 human_summary_table(a)});
  if (!a.deltas.empty())
    out.push_back({fmt::format("Deltas against {} ({})", a.baseline, metric_name(a.metric)),
                   "delta = baseline - variant, positive = better. Paired over shared seeds (t interval on per-seed "
                   "differences, Wilcoxon signed-rank), Welch when the variants share fewer than two seeds; p (Holm) "
                   "adjusts the t-test p-values over the variants compared.",
                   human_delta_table(a)});
  if (a.published)
    out.push_back({fmt::format("Published numbers ({})", metric_name(a.published->metric)),
                   fmt::format("Source: {}. The paper reports one seed, so 'in pred.' (where a new seed would fall: "
                               "mean ± t·SD·sqrt(1+1/n)) is the fairer check than 'in CI' (where the mean is).",
                               a.published->source),
                   human_published_table(a)});
  if (!a.excluded.empty())
    out.push_back({"Excluded cells", "Only cells with status done and a value of the metric count.", excluded_table(a)});
  if (!a.setup_conflicts.empty())
    out.push_back({"WARNING: paired cells ran with different setups",
                   "--allow-mixed-world-size was given; these comparisons mix world sizes or backends.",
                   setup_conflict_table(a)});
  if (!a.params.mope.empty()) {
    out.push_back({"MoPE (omega, sigma) per run",
                   fmt::format("Sigma regions: below 1, character [1,6), word [6,20), clause [20,55), sentence >= 55. "
                               "On the boundary: |omega*sigma/5 - 1| <= {:g}. Move: distance in (log omega, log sigma) "
                               "from initialisation. k: clusters of (log omega, log sigma) chosen by the gap statistic "
                               "/ BIC / silhouette (k init: the same on the initial pairs, a control).",
                               a.params.boundary_tolerance),
                   human_mope_table(a)});
    out.push_back({"MoPE k-means: gap statistic per k",
                   "k-means of (log omega, log sigma), k = 1..8, seeded; the gap statistic (Tibshirani et al. 2001, "
                   "first-SE-max rule) can choose k = 1. Every score (within-SS, gap, BIC, silhouette) is in the "
                   "report's mope_k_scores.csv and in the JSON.",
                   human_k_table(a)});
  }
  if (!a.params.gates.empty())
    out.push_back({"Gate parameters per layer (over heads)",
                   "Per layer: the mean over heads of each head's mean over seeds, with the lowest and highest head.",
                   gate_layer_table(a), 4});
  return out;
}

std::vector<std::string> all_notes(const SweepAnalysis& a) {
  std::vector<std::string> notes = a.notes;
  if (!a.interaction && !a.no_interaction_reason.empty()) notes.push_back("no interaction: " + a.no_interaction_reason);
  notes.insert(notes.end(), a.params.notes.begin(), a.params.notes.end());
  return notes;
}

// ---- LaTeX ----------------------------------------------------------------------------

std::string latex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '_': out += "\\_"; break;
      case '%': out += "\\%"; break;
      case '&': out += "\\&"; break;
      case '#': out += "\\#"; break;
      case '$': out += "\\$"; break;
      case '{': out += "\\{"; break;
      case '}': out += "\\}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      default: out += c;
    }
  }
  return out;
}

std::string latex_pm(const stats::Summary& s) {
  if (s.n == 0) return "--";
  if (!s.has_interval) return fmt::format("${}$ (1)", loss(s.mean));
  return fmt::format("${} \\pm {}$ ({})", loss(s.mean), loss(s.ci_high - s.mean), s.n);
}

std::string latex_delta(const Estimate& e) {
  if (!e.has_interval) return fmt::format("${}$", signed_loss(e.estimate));
  return fmt::format("${} \\pm {}$", signed_loss(e.estimate), loss(e.ci_high - e.estimate));
}

// ---- JSON -----------------------------------------------------------------------------

json summary_json(const stats::Summary& s) {
  return {{"n", s.n},           {"mean", s.mean},       {"sd", s.sd},
          {"se", s.se},         {"t_crit", s.t_crit},   {"ci_low", s.ci_low},
          {"ci_high", s.ci_high}, {"has_interval", s.has_interval}, {"level", s.level}};
}

json estimate_json(const Estimate& e) {
  return {{"estimate", e.estimate}, {"se", e.se},           {"df", e.df},
          {"ci_low", e.ci_low},     {"ci_high", e.ci_high}, {"has_interval", e.has_interval},
          {"n", e.n}};
}

json seeds_json(const stats::SeedValues& v) {
  json j = json::object();
  for (const auto& [seed, value] : v) j[std::to_string(seed)] = value;
  return j;
}

json kselection_json(const stats::KSelection& s) {
  json scores = json::array();
  for (const auto& k : s.scores)
    scores.push_back({{"k", k.k},
                      {"within_ss", k.within_ss},
                      {"gap", k.gap},
                      {"gap_se", k.gap_se},
                      {"bic", k.bic},
                      {"silhouette", k.silhouette}});
  json centres = json::array();
  if (s.chosen_k >= 1) {
    const stats::KMeansFit& fit = s.chosen();
    for (size_t c = 0; c < fit.centres.size(); ++c)
      centres.push_back({{"log_omega", fit.centres[c][0]},
                         {"log_sigma", fit.centres[c][1]},
                         {"size", fit.sizes[c]}});
  }
  return {{"chosen_k", s.chosen_k},   {"criterion", stats::k_criterion_name(s.criterion)},
          {"gap_k", s.gap_k},         {"bic_k", s.bic_k},
          {"silhouette_k", s.silhouette_k}, {"kmax_used", s.kmax_used},
          {"scores", scores},         {"chosen_centres", centres}};
}

json regions_json(const std::array<std::size_t, 5>& r) {
  json j = json::object();
  for (size_t i = 0; i < r.size(); ++i) j[stats::sigma_region_name(static_cast<stats::SigmaRegion>(i))] = r[i];
  return j;
}

json interaction_json(const InteractionAnalysis& ia) {
  const stats::InteractionResult& r = ia.result;
  json j = {{"factors", {{"a", ia.factors.a}, {"b", ia.factors.b}, {"ab", ia.factors.ab}, {"base", ia.factors.base}}},
            {"metric", metric_name(ia.metric)},
            {"mean_base", r.mean_base},
            {"mean_a", r.mean_a},
            {"mean_b", r.mean_b},
            {"mean_ab", r.mean_ab},
            {"delta_a", r.delta_a},
            {"delta_b", r.delta_b},
            {"delta_ab", r.delta_ab},
            {"estimate", r.estimate},
            {"se", r.interval.se},
            {"df", r.interval.df},
            {"t_crit", r.interval.t_crit},
            {"ci_low", r.interval.ci_low},
            {"ci_high", r.interval.ci_high},
            {"p", r.interval.p},
            {"has_interval", r.interval.has_interval},
            {"paired", r.paired},
            {"n", r.n},
            {"n_cells", r.n_cells},
            {"seeds", r.seeds},
            {"per_seed", r.per_seed},
            {"unmatched_seeds", ia.unmatched_seeds},
            {"method", r.method},
            {"ratio", {{"estimate", r.ratio_estimate}, {"low", r.ratio_low}, {"high", r.ratio_high}}},
            {"sum_of_parts", estimate_json(ia.sum_of_parts)},
            {"verdict", verdict_label(r.verdict)},
            {"verdict_text", ia.verdict_text}};
  j["bootstrap"] = r.has_bootstrap ? json{{"low", r.bootstrap.low},
                                          {"high", r.bootstrap.high},
                                          {"estimate", r.bootstrap.estimate},
                                          {"resamples", r.bootstrap.resamples},
                                          {"seed", r.bootstrap.seed},
                                          {"level", r.bootstrap.level}}
                                   : json(nullptr);
  return j;
}

}  // namespace

OutputFormat parse_output_format(std::string_view name) {
  if (name == "table") return OutputFormat::table;
  if (name == "csv") return OutputFormat::csv;
  if (name == "json") return OutputFormat::json;
  if (name == "markdown") return OutputFormat::markdown;
  EGM_THROW(ConfigError, "unknown format '{}'; valid: table, csv, json, markdown", std::string(name));
}

std::string render_main_table(const SweepAnalysis& a) {
  std::string s = header(a) + "\n";
  if (a.interaction) {
    s += indent(text_table(grid(a, *a.interaction)), "  ");
    s += "\n";
    s += indent(interaction_lines(a, *a.interaction), "  ");
  } else {
    s += indent(text_table(variant_delta_table(a)), "  ");
    if (!a.no_interaction_reason.empty()) s += fmt::format("  no interaction: {}\n", a.no_interaction_reason);
  }
  if (!a.setup_conflicts.empty())
    s += fmt::format("  WARNING: {} comparisons pair cells run with different world sizes or backends "
                     "(--allow-mixed-world-size)\n",
                     a.setup_conflicts.size());
  return s;
}

std::string render_main_table(db::ResultsDb& db, const std::string& sweep, const AnalysisOptions& options) {
  AnalysisOptions o = options;
  o.analyse_params = false;  // the headline needs no parameters
  return render_main_table(analyze_sweep(db, sweep, o));
}

std::string render_text(const SweepAnalysis& a) {
  std::string s = render_main_table(a);
  for (const auto& sec : sections(a)) {
    s += fmt::format("\n{}\n", sec.title);
    if (!sec.intro.empty()) s += indent(sec.intro, "  ");
    s += indent(text_table(sec.table, sec.digits), "  ");
  }
  const std::vector<std::string> notes = all_notes(a);
  if (!notes.empty()) {
    s += "\nNotes\n";
    for (const auto& n : notes) s += "  - " + n + "\n";
  }
  return s;
}

std::string render_markdown_main(const SweepAnalysis& a) {
  const bool published = a.published && a.published->metric == a.metric;
  db::Table t;
  t.columns = {"variant", "attention", "position", fmt::format("{} mean ± {} CI (n)", metric_name(a.metric),
                                                               percent(a.level)),
               fmt::format("delta ± {} CI", percent(a.level))};
  if (published) {
    t.columns.push_back("published");
    t.columns.push_back("published delta");
  }
  for (const auto& v : a.variants) {
    const DeltaResult* d = a.find_delta(v.variant);
    std::vector<db::Value> row{str(v.variant), str(v.attention), str(v.position), str(mean_pm(v.at(a.metric).summary)),
                               str(d ? delta_pm(d->delta) : v.variant == a.baseline ? "baseline" : "-")};
    if (published) {
      const PublishedRow* p = nullptr;
      for (const auto& r : a.published->rows)
        if (r.variant == v.variant) p = &r;
      row.push_back(str(p ? loss(p->published) : "-"));
      row.push_back(str(p && p->published_delta ? signed_loss(*p->published_delta) : "-"));
    }
    t.rows.push_back(std::move(row));
  }
  if (a.interaction) {
    const InteractionAnalysis& ia = *a.interaction;
    Estimate e;
    e.estimate = ia.result.estimate;
    e.ci_low = ia.result.interval.ci_low;
    e.ci_high = ia.result.interval.ci_high;
    e.has_interval = ia.result.interval.has_interval;
    std::vector<db::Value> row{
        str(fmt::format("**interaction** I = Δ({}) − Δ({}) − Δ({})", ia.factors.ab, ia.factors.a, ia.factors.b)),
        str(""), str(""), str(fmt::format("n = {}", ia.result.n)), str(delta_pm(e))};
    if (published) {
      row.push_back(str(""));
      row.push_back(str(a.published->published_interaction ? signed_loss(*a.published->published_interaction) : "-"));
    }
    t.rows.push_back(std::move(row));
  }
  std::string s = markdown_table(t);
  if (a.interaction) s += fmt::format("\nVerdict: **{}**\n", a.interaction->verdict_text);
  return s;
}

std::string render_markdown(const SweepAnalysis& a) {
  std::string s = fmt::format("# Sweep `{}`\n\n", a.sweep);
  if (!a.description.empty()) s += a.description + "\n\n";
  s += fmt::format("Metric: `{}`, {}. {} Student-t intervals over seeds", metric_name(a.metric),
                   metric_description(a.metric), percent(a.level));
  if (!a.baseline.empty()) s += fmt::format("; delta = {} − variant (positive = better)", a.baseline);
  s += ".\n\n" + exclusion_summary(a) + ".\n\n";
  s += "## Main table\n\n" + render_markdown_main(a) + "\n";
  if (a.interaction) s += "```\n" + interaction_lines(a, *a.interaction) + "```\n";
  else if (!a.no_interaction_reason.empty()) s += "No interaction: " + a.no_interaction_reason + ".\n";
  for (const auto& sec : sections(a)) {
    s += fmt::format("\n## {}\n\n", sec.title);
    if (!sec.intro.empty()) s += sec.intro + "\n\n";
    s += md_table(sec.table, sec.digits);
  }
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

std::string render_latex_main(const SweepAnalysis& a) {
  const bool published = a.published && a.published->metric == a.metric;
  std::string s;
  s += "% Generated by egm report from the results database; do not edit.\n";
  s += "% Requires \\usepackage{booktabs}.\n";
  s += "\\begin{table}[t]\n\\centering\n";
  std::string caption = fmt::format(
      "Sweep \\texttt{{{}}}: {}, mean $\\pm$ half-width of the {} Student-$t$ interval over $n$ seeds",
      latex_escape(a.sweep), latex_escape(metric_name(a.metric)), latex_escape(percent(a.level)));
  if (!a.baseline.empty())
    caption += fmt::format("; $\\Delta$ = \\texttt{{{}}} $-$ variant (positive = better)", latex_escape(a.baseline));
  if (published) caption += fmt::format("; published: {}", latex_escape(a.published->source));
  s += "\\caption{" + caption + ".}\n";
  s += published ? "\\begin{tabular}{llllllr}\n" : "\\begin{tabular}{lllll}\n";
  s += "\\toprule\n";
  s += "Variant & Attention & Position & Val loss & $\\Delta$";
  if (published) s += " & Published & Published $\\Delta$";
  s += " \\\\\n\\midrule\n";
  for (const auto& v : a.variants) {
    const DeltaResult* d = a.find_delta(v.variant);
    s += fmt::format("{} & {} & {} & {} & {}", latex_escape(v.variant), latex_escape(v.attention),
                     latex_escape(v.position), latex_pm(v.at(a.metric).summary), d ? latex_delta(d->delta) : "--");
    if (published) {
      const PublishedRow* p = nullptr;
      for (const auto& r : a.published->rows)
        if (r.variant == v.variant) p = &r;
      s += fmt::format(" & {} & {}", p ? loss(p->published) : "--",
                       p && p->published_delta ? fmt::format("${}$", signed_loss(*p->published_delta)) : "--");
    }
    s += " \\\\\n";
  }
  if (a.interaction) {
    const InteractionAnalysis& ia = *a.interaction;
    Estimate e;
    e.estimate = ia.result.estimate;
    e.ci_low = ia.result.interval.ci_low;
    e.ci_high = ia.result.interval.ci_high;
    e.has_interval = ia.result.interval.has_interval;
    s += "\\midrule\n";
    s += fmt::format("\\multicolumn{{3}}{{l}}{{Interaction $I = \\Delta(\\text{{{}}}) - \\Delta(\\text{{{}}}) - "
                     "\\Delta(\\text{{{}}})$}} & $n = {}$ & {}",
                     latex_escape(ia.factors.ab), latex_escape(ia.factors.a), latex_escape(ia.factors.b), ia.result.n,
                     latex_delta(e));
    if (published)
      s += fmt::format(" & & {}", a.published->published_interaction
                                      ? fmt::format("${}$", signed_loss(*a.published->published_interaction))
                                      : "--");
    s += " \\\\\n";
  }
  s += "\\bottomrule\n\\end{tabular}\n";
  if (a.interaction)
    s += fmt::format("% verdict: {}\n", a.interaction->verdict_text);
  s += "\\end{table}\n";
  return s;
}

json to_json(const SweepAnalysis& a) {
  json j;
  j["sweep"] = a.sweep;
  j["description"] = a.description;
  j["metric"] = metric_name(a.metric);
  j["level"] = a.level;
  j["baseline"] = a.baseline;
  j["rng_seed"] = a.rng_seed;
  json excluded = json::array();
  for (const auto& e : a.excluded)
    excluded.push_back({{"cell", e.key}, {"variant", e.variant}, {"seed", e.seed}, {"status", e.status},
                        {"reason", e.reason}});
  j["cells"] = {{"total", a.cells_total}, {"used", a.cells_used}, {"excluded", excluded}};

  json variants = json::array();
  for (const auto& v : a.variants) {
    json metrics = json::object();
    for (const auto& m : v.metrics) {
      if (m.summary.n == 0) continue;
      json mj = summary_json(m.summary);
      mj["seeds"] = seeds_json(m.by_seed);
      json setups = json::array();
      for (const auto& s : m.setups) setups.push_back({{"world_size", s.world_size}, {"backend", s.backend}});
      mj["setups"] = setups;
      metrics[metric_name(m.metric)] = mj;
    }
    variants.push_back({{"variant", v.variant}, {"attention", v.attention}, {"position", v.position},
                        {"metrics", metrics}});
  }
  j["variants"] = variants;

  json deltas = json::array();
  for (const auto& d : a.deltas) {
    json dj = estimate_json(d.delta);
    dj["variant"] = d.variant;
    dj["metric"] = metric_name(d.metric);
    dj["paired"] = d.paired;
    dj["seeds"] = d.seeds;
    dj["per_seed"] = d.per_seed;
    dj["unmatched_seeds"] = d.unmatched_seeds;
    dj["p"] = d.p;
    dj["p_holm"] = d.p_holm;
    dj["method"] = d.method;
    dj["wilcoxon"] = d.has_wilcoxon ? json{{"v", d.wilcoxon.v},
                                           {"p", d.wilcoxon.p},
                                           {"n_used", d.wilcoxon.n_used},
                                           {"n_zeros", d.wilcoxon.n_zeros},
                                           {"method", stats::wilcoxon_method_name(d.wilcoxon.method)}}
                                    : json(nullptr);
    deltas.push_back(dj);
  }
  j["deltas"] = deltas;
  j["interaction"] = a.interaction ? interaction_json(*a.interaction) : json(nullptr);
  j["no_interaction_reason"] = a.no_interaction_reason;

  if (a.published) {
    const PublishedComparison& p = *a.published;
    json rows = json::array();
    for (const auto& r : p.rows) {
      json rj = {{"variant", r.variant},
                 {"published", r.published},
                 {"ours", summary_json(r.ours)},
                 {"inside_ci", r.inside_ci},
                 {"prediction_low", r.prediction_low},
                 {"prediction_high", r.prediction_high},
                 {"inside_prediction", r.inside_prediction},
                 {"has_interval", r.has_interval},
                 {"delta_inside", r.delta_inside}};
      rj["published_delta"] = r.published_delta ? json(*r.published_delta) : json(nullptr);
      rj["our_delta"] = r.our_delta ? estimate_json(*r.our_delta) : json(nullptr);
      rows.push_back(rj);
    }
    json pj = {{"source", p.source}, {"metric", metric_name(p.metric)}, {"rows", rows}};
    pj["interaction"] = p.published_interaction
                            ? json{{"published", *p.published_interaction},
                                   {"ours", p.our_interaction ? interaction_json(*p.our_interaction) : json(nullptr)},
                                   {"inside", p.interaction_inside}}
                            : json(nullptr);
    j["published"] = pj;
  } else {
    j["published"] = nullptr;
  }

  json conflicts = json::array();
  for (const auto& c : a.setup_conflicts) conflicts.push_back({{"comparison", c.comparison}, {"cells", c.detail}});
  j["setup_conflicts"] = conflicts;

  json mope = json::array();
  for (const auto& r : a.params.mope) {
    json pairs = json::array();
    for (const auto& p : r.pairs) {
      json pj = {{"idx", p.idx},       {"omega", p.omega},
                 {"sigma", p.sigma},   {"region", stats::sigma_region_name(p.region)},
                 {"on_boundary", p.on_boundary}, {"has_init", p.has_init}};
      if (p.has_init) {
        pj["omega0"] = p.omega0;
        pj["sigma0"] = p.sigma0;
        pj["region0"] = stats::sigma_region_name(p.region0);
        pj["on_boundary0"] = p.on_boundary0;
        pj["log_move"] = p.log_move;
        pj["sigma_ratio"] = p.sigma_ratio;
      }
      pairs.push_back(pj);
    }
    json rj = {{"run", r.key},
               {"variant", r.variant},
               {"seed", r.seed},
               {"step", r.step},
               {"has_init", r.has_init},
               {"regions", regions_json(r.regions)},
               {"boundary_share", r.boundary_share},
               {"boundary_share_init", r.boundary_share_init},
               {"move_median", r.move_median},
               {"move_max", r.move_max},
               {"sigma_ratio_median", r.sigma_ratio_median},
               {"sigma_ratio_max", r.sigma_ratio_max},
               {"pairs", pairs}};
    rj["regions_init"] = r.has_init ? regions_json(r.regions_init) : json(nullptr);
    rj["clusters"] = r.clustered ? kselection_json(r.clusters) : json(nullptr);
    rj["clusters_init"] = r.clustered_init ? kselection_json(r.clusters_init) : json(nullptr);
    mope.push_back(rj);
  }
  json gates = json::array();
  for (const auto& g : a.params.gates)
    gates.push_back({{"variant", g.variant}, {"module", g.module}, {"layer", g.layer}, {"head", g.idx},
                     {"name", g.name},       {"n", g.n},           {"mean", g.mean},   {"sd", g.sd},
                     {"min", g.min},         {"max", g.max},       {"init_mean", g.init_mean}});
  j["params"] = {{"boundary_tolerance", a.params.boundary_tolerance}, {"mope", mope}, {"gates", gates},
                 {"notes", a.params.notes}};
  j["notes"] = all_notes(a);
  return j;
}

std::string render_analysis(const SweepAnalysis& a, OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return render_text(a);
    case OutputFormat::markdown: return render_markdown(a);
    case OutputFormat::csv: return db::format_table(paper_table(a), db::Format::csv);
    case OutputFormat::json: return to_json(a).dump(2) + "\n";
  }
  return "";
}

}  // namespace egm::analysis
