// The paper's main table as data, built once from an analysis and rendered
// four ways: CSV (every number at full precision, NaN as an empty field),
// Markdown and LaTeX (the paper's layout: mean ± half-width, delta ±
// half-width, published columns) and aligned text (`egm analyze`'s headline:
// the 2x2 of means, or without 2x2 factors the variants with their deltas).
// Rows: the variants in spec order, then the interaction when there is one.
// `egm serve` shows the display form as an HTML table, downloads the CSV form.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "analysis/sweep_analysis.h"
#include "db/table_format.h"

namespace egm::analysis {

struct PaperRow {
  bool interaction = false;  // the interaction row: I = delta(ab) - delta(a) - delta(b)
  std::string variant;       // "interaction" on the interaction row
  std::string attention;     // empty on the interaction row
  std::string position;
  std::size_t n = 0;         // seeds behind the mean (n = 0: not measured); I's n
  stats::Summary mean;       // the metric over seeds, with its interval (variant rows)
  std::optional<Estimate> delta;  // against the baseline, or I itself; nullopt: none
  double p = NAN;                 // the delta's t-test p, or I's
  double p_holm = NAN;
  double wilcoxon_p = NAN;        // NaN: no Wilcoxon test
  std::string method;             // how the delta (or I) was computed; empty without one
  std::optional<double> published;        // the published value (same metric only)
  std::optional<double> published_delta;  // the published delta, or the published I
  std::string note;                       // "baseline" on the baseline's row (it has no delta)
};

struct PaperTable {
  std::string sweep;
  Metric metric = Metric::final_val;
  double level = 0.95;
  std::string baseline;
  // The spec's published values are on this metric: the published columns exist.
  bool published = false;
  std::string published_source;
  std::vector<PaperRow> rows;
  // The interaction's factors and verdict; empty without an interaction.
  Factors factors;
  std::string verdict;

  const PaperRow* find(const std::string& variant) const;
  const PaperRow* interaction() const;
};

PaperTable build_paper_table(const SweepAnalysis& analysis);

// CSV form: variant, attention, position, n, mean, sd, ci_low, ci_high, delta,
// delta_low, delta_high, p, p_holm, wilcoxon_p, method, published,
// published_delta. The interaction row carries I in the delta columns and the
// published interaction in published_delta.
db::Table paper_number_table(const PaperTable& table);
// The paper's layout with the numbers as people read them (text cells):
// variant, attention, position, mean ± half-width (n), delta ± half-width,
// [published, published delta], the interaction row last. The Markdown form
// and the sweep page of `egm serve` (an HTML table) are this table.
db::Table paper_display_table(const PaperTable& table);
// Markdown: paper_display_table, then "Verdict: **...**".
std::string paper_markdown(const PaperTable& table);
// LaTeX (booktabs), names escaped, the verdict as a comment.
std::string paper_latex(const PaperTable& table);
// Aligned text: rows = attention of base / a, columns = position of base / b,
// each cell "variant: mean ± half-width (n)". Needs an interaction row.
db::Table paper_text_grid(const PaperTable& table);
// Aligned text without 2x2 factors: variant, n, mean ± half-width, delta, CI,
// p (Holm), method.
db::Table paper_text_variants(const PaperTable& table);

}  // namespace egm::analysis
