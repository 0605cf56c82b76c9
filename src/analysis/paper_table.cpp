// The paper's table built once (variants, deltas, published values, the
// interaction) and written as numbers, display text, Markdown and LaTeX.
#include "analysis/paper_table.h"

#include <fmt/format.h>

#include <cmath>

#include "analysis/number_text.h"
#include "analysis/table_cells.h"
#include "analysis/tables.h"
#include "util/error.h"

namespace egm::analysis {

namespace {

using human::delta_pm;
using human::interval;
using human::latex_delta;
using human::latex_escape;
using human::latex_pm;
using human::loss;
using human::mean_pm;
using human::p_text;
using human::signed_loss;

using cells::num;
using cells::opt_num;
using cells::str;

}  // namespace

const PaperRow* PaperTable::find(const std::string& variant) const {
  for (const auto& r : rows)
    // Skips the interaction row, whose variant field holds the word "interaction".
    if (!r.interaction && r.variant == variant) return &r;
  return nullptr;
}

const PaperRow* PaperTable::interaction() const {
  for (const auto& r : rows)
    if (r.interaction) return &r;
  return nullptr;
}

PaperTable build_paper_table(const SweepAnalysis& a) {
  PaperTable t;
  t.sweep = a.sweep;
  t.metric = a.metric;
  t.level = a.level;
  t.baseline = a.baseline;
  // Published numbers only when they measure this table's metric: another metric's would sit in the wrong column.
  t.published = a.published && a.published->metric == a.metric;
  if (t.published) t.published_source = a.published->source;
  for (const auto& v : a.variants) {
    PaperRow r;
    r.variant = v.variant;
    r.attention = v.attention;
    r.position = v.position;
    // The table shows one metric: each variant's summary of it.
    r.mean = v.at(a.metric).summary;
    r.n = r.mean.n;
    // The baseline has no delta against itself, and a variant without values has none either.
    if (const DeltaResult* d = a.find_delta(v.variant)) {
      r.delta = d->delta;
      r.p = d->p;
      r.p_holm = d->p_holm;
      if (d->has_wilcoxon) r.wilcoxon_p = d->wilcoxon.p;
      r.method = d->method;
    } else if (v.variant == a.baseline) {  // no delta against itself: the note stands where the method would
      r.note = "baseline";
    }
    if (t.published)
      // The variant's published row, if the paper ran it.
      for (const auto& p : a.published->rows)
        if (p.variant == v.variant) {
          r.published = p.published;
          r.published_delta = p.published_delta;
          break;
        }
    t.rows.push_back(std::move(r));
  }
  // The interaction is a contrast of four variants, not a variant's mean: its row
  // carries I in the delta columns and leaves the mean columns empty.
  if (a.interaction) {
    const InteractionAnalysis& ia = *a.interaction;
    // I's interval comes from the interaction result (paired t or Welch), not from any variant's summary.
    const stats::ContrastResult& c = ia.result.interval;
    PaperRow r;
    r.interaction = true;
    r.variant = "interaction";
    r.n = ia.result.n;
    Estimate e;
    e.estimate = ia.result.estimate;
    e.se = c.se;
    e.df = c.df;
    e.ci_low = c.ci_low;
    e.ci_high = c.ci_high;
    e.has_interval = c.has_interval;
    e.n = ia.result.n;
    r.delta = e;
    r.p = c.p;
    r.method = ia.result.method;
    // The published I, from the published values of all four cells (sweep_analysis.cpp).
    if (t.published) r.published_delta = a.published->published_interaction;
    t.factors = ia.factors;
    t.verdict = ia.verdict_text;
    t.rows.push_back(std::move(r));
  }
  return t;
}

db::Table paper_number_table(const PaperTable& t) {
  db::Table out;
  out.columns = {"variant",   "attention",  "position", "n",      "mean",       "sd",     "ci_low",    "ci_high",
                 "delta",     "delta_low",  "delta_high", "p",    "p_holm",     "wilcoxon_p", "method", "published",
                 "published_delta"};
  for (const auto& r : t.rows) {
    // The interaction has no attention or position of its own: NULL, not empty text.
    std::vector<db::Value> row{str(r.variant), r.interaction ? db::Value() : str(r.attention),
                               r.interaction ? db::Value() : str(r.position), db::Value(static_cast<int64_t>(r.n))};
    if (!r.interaction && r.mean.n > 0)  // a variant without a done cell has no summary: empty fields, not zeros
      for (double x : {r.mean.mean, r.mean.sd, r.mean.ci_low, r.mean.ci_high}) row.push_back(num(x));
    else
      row.insert(row.end(), 4, db::Value());
    // The interaction row fills the delta columns too, with I and its interval.
    if (r.delta) {
      for (double x : {r.delta->estimate, r.delta->ci_low, r.delta->ci_high, r.p}) row.push_back(num(x));
      row.push_back(num(r.p_holm));
      row.push_back(num(r.wilcoxon_p));
      row.push_back(str(r.method));
    } else {
      // No delta: six empty fields, then the note ("baseline") where the method would stand.
      row.insert(row.end(), 6, db::Value());
      row.push_back(str(r.note));
    }
    row.push_back(opt_num(r.published));
    row.push_back(opt_num(r.published_delta));
    out.rows.push_back(std::move(row));
  }
  return out;
}

namespace {

std::string interaction_label(const Factors& f) {
  return fmt::format("interaction I = Δ({}) − Δ({}) − Δ({})", f.ab, f.a, f.b);
}

}  // namespace

db::Table paper_display_table(const PaperTable& t) {
  db::Table out;
  out.columns = {"variant", "attention", "position",
                 fmt::format("{} mean ± {} CI (n)", metric_name(t.metric), percent(t.level)),
                 fmt::format("delta ± {} CI", percent(t.level))};
  if (t.published) {
    out.columns.push_back("published");
    out.columns.push_back("published delta");
  }
  for (const auto& r : t.rows) {
    std::vector<db::Value> row;
    if (r.interaction) {
      // I's formula in the variant column; n stands in the mean column, which has no value for it.
      row = {str(interaction_label(t.factors)), str(""), str(""), str(fmt::format("n = {}", r.n)),
             str(delta_pm(*r.delta))};
      if (t.published) {
        row.push_back(str(""));
        row.push_back(str(r.published_delta ? signed_loss(*r.published_delta) : "-"));
      }
    } else {
      row = {str(r.variant), str(r.attention), str(r.position), str(mean_pm(r.mean)),
             // No delta: "baseline" for the baseline, "-" for any other variant.
             str(r.delta ? delta_pm(*r.delta) : r.note == "baseline" ? "baseline" : "-")};
      if (t.published) {
        row.push_back(str(r.published ? loss(*r.published) : "-"));
        row.push_back(str(r.published_delta ? signed_loss(*r.published_delta) : "-"));
      }
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

std::string paper_markdown(const PaperTable& t) {
  db::Table out = paper_display_table(t);
  // The interaction's label in bold up to its formula: replace(0, 11, ...) swaps the word
  // "interaction" (11 characters) for "interaction**" after the opening "**".
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (t.rows[i].interaction) out.rows[i][0] = str("**" + interaction_label(t.factors).replace(0, 11, "interaction**"));
  std::string s = markdown_table(out);
  if (t.interaction()) s += fmt::format("\nVerdict: **{}**\n", t.verdict);
  return s;
}

std::string paper_latex(const PaperTable& t) {
  std::string s;
  s += "% Generated by egm report from the results database; do not edit.\n";
  s += "% Requires \\usepackage{booktabs}.\n";
  s += "\\begin{table}[t]\n\\centering\n";
  std::string caption = fmt::format(
      "Sweep \\texttt{{{}}}: {}, mean $\\pm$ half-width of the {} Student-$t$ interval over $n$ seeds",
      latex_escape(t.sweep), latex_escape(metric_name(t.metric)), latex_escape(percent(t.level)));
  if (!t.baseline.empty())
    // Delta = baseline minus variant (losses), so positive means better.
    caption += fmt::format("; $\\Delta$ = \\texttt{{{}}} $-$ variant (positive = better)", latex_escape(t.baseline));
  if (t.published) caption += fmt::format("; published: {}", latex_escape(t.published_source));
  s += "\\caption{" + caption + ".}\n";
  // Seven columns with the published pair (its delta right-aligned), five without.
  s += t.published ? "\\begin{tabular}{llllllr}\n" : "\\begin{tabular}{lllll}\n";
  s += "\\toprule\n";
  s += "Variant & Attention & Position & Val loss & $\\Delta$";
  if (t.published) s += " & Published & Published $\\Delta$";
  s += " \\\\\n\\midrule\n";
  for (const auto& r : t.rows) {
    if (r.interaction) {
      s += "\\midrule\n";
      // The formula spans the variant, attention and position columns; fmt's {{ and }} are literal braces.
      s += fmt::format("\\multicolumn{{3}}{{l}}{{Interaction $I = \\Delta(\\text{{{}}}) - \\Delta(\\text{{{}}}) - "
                       "\\Delta(\\text{{{}}})$}} & $n = {}$ & {}",
                       latex_escape(t.factors.ab), latex_escape(t.factors.a), latex_escape(t.factors.b), r.n,
                       latex_delta(*r.delta));
      if (t.published)
        // I has no published value, only a published delta: the first of the pair stays empty.
        s += fmt::format(" & & {}", r.published_delta ? fmt::format("${}$", signed_loss(*r.published_delta)) : "--");
    } else {
      s += fmt::format("{} & {} & {} & {} & {}", latex_escape(r.variant), latex_escape(r.attention),
                       latex_escape(r.position), latex_pm(r.mean), r.delta ? latex_delta(*r.delta) : "--");
      if (t.published)
        s += fmt::format(" & {} & {}", r.published ? loss(*r.published) : "--",
                         r.published_delta ? fmt::format("${}$", signed_loss(*r.published_delta)) : "--");
    }
    s += " \\\\\n";
  }
  s += "\\bottomrule\n\\end{tabular}\n";
  if (t.interaction()) s += fmt::format("% verdict: {}\n", t.verdict);
  s += "\\end{table}\n";
  return s;
}

// The 2x2 as a grid: rows the attention of base and a, columns the position of base and b,
// each cell the variant with both (base, b / a, ab).
db::Table paper_text_grid(const PaperTable& t) {
  const Factors& f = t.factors;
  const PaperRow* base = t.find(f.base);
  const PaperRow* va = t.find(f.a);
  const PaperRow* vb = t.find(f.b);
  const PaperRow* vab = t.find(f.ab);
  // An internal invariant: the caller draws the grid only for an analysis with all four variants.
  EGM_CHECK(base && va && vb && vab, "paper_text_grid: sweep {} lacks a variant of the 2x2 ({}, {}, {}, {})", t.sweep,
            f.base, f.a, f.b, f.ab);
  auto label = [](const PaperRow* r, bool attention, const std::string& fallback) {
    const std::string& s = attention ? r->attention : r->position;
    return s == "?" ? fallback : s;  // "?": a variant name this build does not know (its parts unknown)
  };
  db::Table out;
  // Columns by position (base's, then b's); rows by attention (base's, then a's).
  out.columns = {"", label(base, false, f.base + "'s"), label(vb, false, f.b + "'s")};
  auto cell = [&](const PaperRow* r) { return str(fmt::format("{}: {}", r->variant, mean_pm(r->mean))); };
  out.rows.push_back({str(label(base, true, f.base + "'s")), cell(base), cell(vb)});
  out.rows.push_back({str(label(va, true, f.a + "'s")), cell(va), cell(vab)});
  return out;
}

db::Table paper_text_variants(const PaperTable& t) {
  db::Table out;
  out.columns = {"variant", "n", "mean ± half-width", "delta", fmt::format("{} CI", percent(t.level)), "p (Holm)",
                 "method"};
  for (const auto& r : t.rows) {
    if (r.interaction) continue;
    const std::optional<Estimate>& d = r.delta;
    out.rows.push_back({str(r.variant), db::Value(static_cast<int64_t>(r.mean.n)), str(mean_pm(r.mean)),
                        str(d ? signed_loss(d->estimate) : r.note == "baseline" ? "baseline" : "-"),
                        // An estimate without an interval (one seed) says so; no delta at all is "-".
                        str(d && d->has_interval ? interval(d->ci_low, d->ci_high) : d ? "no interval" : "-"),
                        str(d ? p_text(r.p_holm) : "-"), str(d ? r.method : "")});
  }
  return out;
}

}  // namespace egm::analysis
