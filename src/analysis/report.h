// `egm report`: one folder with everything a reader or a script needs about a
// sweep: the paper-layout table (Markdown, LaTeX, CSV), the full analysis
// (Markdown, text, JSON), one CSV per section, and gnuplot plots (PNG and
// SVG, with their scripts and data so they can be restyled): val loss curves
// with seed bands, the omega-sigma plane, and the interaction with its
// interval. index.md links it all. Without gnuplot the tables, scripts and
// data are still written and the result says why there are no images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/sweep_analysis.h"
#include "analysis/sweep_data.h"
#include "db/results_db.h"

namespace egm::analysis {

struct ReportOptions {
  std::string out_dir;            // created when missing; files in it are replaced
  AnalysisOptions analysis;
  std::string gnuplot = "gnuplot";  // program name (looked up on $PATH) or path; empty: no plots
};

struct ReportResult {
  std::string out_dir;
  std::vector<std::string> files;  // written, relative to out_dir, in writing order
  bool plots_made = false;         // every plot's PNG and SVG exist and are non-empty
  std::string plot_message;        // why not, when !plots_made
  SweepAnalysis analysis;
};

// Throws what analyze_sweep throws, and IoError when the folder cannot be written.
ReportResult write_report(const SweepData& data, const ReportOptions& options);
ReportResult write_report(db::ResultsDb& db, const std::string& sweep, const ReportOptions& options);

// The eval_val curve of a variant over its done cells: at each step, the
// seeds that have that step, their mean, sample SD (0 with one seed), min and max.
struct CurvePointStats {
  int64_t step = 0;
  std::size_t n = 0;
  double mean = 0.0;
  double sd = 0.0;
  double min = 0.0;
  double max = 0.0;
};
using VariantCurve = std::pair<std::string, std::vector<CurvePointStats>>;
// Variants in spec order; variants without curve points are left out.
std::vector<VariantCurve> val_curve_bands(const SweepData& data);

}  // namespace egm::analysis
