// The analysis for people and for scripts: the main 2x2 table with the
// interaction verdict (what `egm analyze` prints first and what a sweep
// prints at its end), the full text / Markdown report, the LaTeX table in the
// paper's layout (paper_table.h builds that table once for every format), and
// JSON with every number (analysis_json.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis_json.h"
#include "analysis/sweep_analysis.h"
#include "db/results_db.h"
#include "db/table_format.h"

namespace egm::analysis {

enum class OutputFormat { table, csv, json, markdown };
// "table" | "csv" | "json" | "markdown"; ConfigError lists them otherwise.
OutputFormat parse_output_format(std::string_view name);

// The headline: the 2x2 of cell means with intervals, the three deltas, the
// sum of the parts, the interaction with its interval (t, bootstrap,
// perplexity ratio), the verdict, the published interaction, and how many
// cells were left out. Without 2x2 factors, the variant table with deltas.
// With one seed it says that no interval exists instead of printing one.
std::string render_main_table(const SweepAnalysis& analysis);
// The same from the database: loads the sweep, analyses it (options as given)
// and renders. Throws what analyze_sweep throws (ConfigError for an unknown
// sweep or for cells run with mixed world sizes / backends).
std::string render_main_table(db::ResultsDb& db, const std::string& sweep, const AnalysisOptions& options = {});

// What a sweep prints when it ends (egm-coordinator) and what `egm analyze`
// prints first: render_main_table; for a sweep with a grid, the main table of
// each point (under "=== grid point N: LABEL ===") and then the table across
// points, as `egm analyze` shows them. Parameters are not analysed.
std::string render_headline(const SweepData& data, const AnalysisOptions& options = {});
// The same from the database (load_sweep, then the above).
std::string render_headline(db::ResultsDb& db, const std::string& sweep, const AnalysisOptions& options = {});

// Every section as aligned text tables (the main table first).
std::string render_text(const SweepAnalysis& analysis);
// Every section as Markdown (the main table in the paper's layout first).
std::string render_markdown(const SweepAnalysis& analysis);
// The paper's layout as a Markdown table: variant, attention, position, val
// loss mean +- half-width (n), delta +- half-width, published, published delta,
// then the interaction row.
std::string render_markdown_main(const SweepAnalysis& analysis);
// The same as a LaTeX table (booktabs), names escaped.
std::string render_latex_main(const SweepAnalysis& analysis);
// The sections every rendering of the full analysis shows after the main
// table, in order, with the numbers people read (four or five decimals,
// signed deltas, intervals as text): `egm analyze`'s text, the Markdown
// report and the sweep page of `egm serve`. `name` is the section's
// full-precision table for downloads (tables.h; report CSV file stem, serve
// /sweep/NAME/<name>.csv).
struct ReportSection {
  std::string title;
  std::string intro;  // may be empty
  db::Table table;
  int digits = 5;     // significant digits of the numbers that are not preformatted text
  std::string name;   // "summary", "deltas", "published", "excluded", "conflicts", "provenance", "mope_runs",
                      // "mope_k_scores", "gates_by_layer"
};
std::vector<ReportSection> report_sections(const SweepAnalysis& analysis);
// The interaction under the main table, line by line: the three deltas, their
// sum, I with its t and bootstrap intervals, the verdict, the published I.
// Empty without an interaction.
std::string render_interaction_lines(const SweepAnalysis& analysis);

// The notes every rendering ends with: the analysis's own, why there is no
// interaction, and the parameter analysis's.
std::vector<std::string> all_notes(const SweepAnalysis& analysis);

// format: table -> render_text, markdown -> render_markdown, csv -> the paper
// table (tables.h paper_table), json -> to_json (indented).
std::string render_analysis(const SweepAnalysis& analysis, OutputFormat format);

}  // namespace egm::analysis
