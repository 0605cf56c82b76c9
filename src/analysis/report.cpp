// write_report: every table of the analysis as a file, the figures as gnuplot
// scripts and data (images when gnuplot runs), and index.md linking them all.
#include "analysis/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "analysis/render.h"
#include "analysis/sequences.h"
#include "analysis/tables.h"
#include "db/table_format.h"
#include "stats/descriptive.h"
#include "util/error.h"
#include "util/files.h"

namespace egm::analysis {

namespace {

bool non_empty_file(const std::string& path) {
  std::error_code ec;
  // gnuplot failing mid-write can leave an empty file behind, which is no image.
  return std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) > 0;
}

std::string tail(const std::string& text, size_t max_chars) {
  // The end of gnuplot's output, where it reports the failing line and its error.
  return text.size() <= max_chars ? text : "..." + text.substr(text.size() - max_chars);
}

struct FileEntry {
  std::string path;
  std::string what;
};

}  // namespace

std::vector<VariantCurve> val_curve_bands(const SweepData& data) {
  // The spec's variant order first, then any other variant the cells have, in cell order.
  std::vector<std::string> order = data.spec.variants;
  for (const auto& c : data.cells)
    if (std::find(order.begin(), order.end(), c.row.variant) == order.end()) order.push_back(c.row.variant);
  std::vector<VariantCurve> out;
  for (const auto& variant : order) {
    std::map<int64_t, std::vector<double>> by_step;
    for (const auto& c : data.cells) {
      // Only done cells: a running cell's partial curve would join the early steps' bands only.
      if (c.row.variant != variant || c.row.status != db::CellStatus::done) continue;
      auto it = data.val_curves.find(c.row.id);
      if (it == data.val_curves.end()) continue;
      for (const auto& p : it->second)
        // A NaN loss (a diverged eval) is left out rather than poisoning its step's mean.
        if (std::isfinite(p.loss)) by_step[p.step].push_back(p.loss);
    }
    if (by_step.empty()) continue;
    std::vector<CurvePointStats> points;
    for (const auto& [step, values] : by_step) {
      const stats::Summary s = stats::summarize(values);
      // One seed has no sd: 0 draws no band around its mean.
      points.push_back({step, s.n, s.mean, s.n > 1 ? s.sd : 0.0, *std::min_element(values.begin(), values.end()),
                        *std::max_element(values.begin(), values.end())});
    }
    out.emplace_back(variant, std::move(points));
  }
  return out;
}

namespace {

// Each figure's gnuplot script and data into plots/, then its images when
// gnuplot runs; result.plot_message says why there are none (or which failed).
void draw_plots(const std::vector<Figure>& made, const ReportOptions& options, ReportResult& result) {
  const std::string& out = options.out_dir;
  const std::string plots = out + "/plots";
  for (const Figure& f : made) {
    const GnuplotFigure g = gnuplot_figure(f);
    // Atomic writes: a reader never sees half a file, and a rerun replaces each one whole.
    atomic_write_file(plots + "/" + f.name + ".dat", g.data);
    atomic_write_file(plots + "/" + f.name + ".gp", g.script);
    result.files.push_back("plots/" + f.name + ".dat");
    result.files.push_back("plots/" + f.name + ".gp");
  }

  std::vector<std::string> plot_notes;
  if (made.empty()) {
    result.plot_message = "nothing to plot (no curves, no MoPE parameters, no interaction)";
  } else if (options.gnuplot.empty()) {
    // An empty --gnuplot switches images off; the scripts and data are still written.
    result.plot_message = "plots switched off; the gnuplot scripts and data are in plots/";
  } else if (std::optional<std::string> gnuplot = find_program(options.gnuplot); !gnuplot) {
    result.plot_message = fmt::format(
        "gnuplot not found (looked for '{}'{}): no images; the tables are written, and the gnuplot scripts and data "
        "are in plots/ (install gnuplot, e.g. Debian's gnuplot-nox, and rerun egm report or run the scripts)",
        options.gnuplot, options.gnuplot.find('/') == std::string::npos ? " on $PATH" : "");
  } else {
    bool all = true;
    for (const auto& p : made) {
      // Run in plots/, where the script's relative file names point.
      const GnuplotRun run = run_gnuplot(*gnuplot, p.name + ".gp", plots);
      bool ok = run.ok;
      // A figure counts only when both images exist and are non-empty, whatever gnuplot's exit code said.
      for (const char* ext : {".png", ".svg"}) {
        const std::string file = "plots/" + p.name + ext;
        if (non_empty_file(out + "/" + file))
          result.files.push_back(file);
        else
          ok = false;
      }
      if (!ok) {
        all = false;
        plot_notes.push_back(fmt::format("{}: gnuplot exited with {}: {}", p.name, run.exit_code, tail(run.output, 600)));
      }
    }
    result.plots_made = all;
    if (!all) result.plot_message = fmt::format("some plots failed: {}", fmt::format("{}", fmt::join(plot_notes, "; ")));
  }
}

// index.md: the headline, each figure with the files drawn for it, and every file with what it holds.
std::string index_markdown(const SweepData& data, const ReportResult& result, const std::vector<Figure>& made,
                           const std::vector<FileEntry>& entries) {
  const SweepAnalysis& a = result.analysis;
  std::string index = fmt::format("# Report: sweep `{}`\n\n", a.sweep);
  if (!a.description.empty()) index += a.description + "\n\n";
  index += fmt::format("Generated by `egm report` from the results database (sweep status: {}, spec {}).\n\n",
                       db::to_string(data.sweep.status), data.sweep.spec_hash.substr(0, 12));
  index += "## Headline\n\n" + render_markdown_main(a) + "\n";
  if (a.interaction) index += "```\n" + render_main_table(a) + "```\n";
  index += "\n## Plots\n\n";
  if (!result.plot_message.empty()) index += "**No images**: " + result.plot_message + ".\n\n";
  for (const auto& p : made) {
    // Only images that were made are embedded or linked; the script and data always are.
    const bool png = std::find(result.files.begin(), result.files.end(), "plots/" + p.name + ".png") != result.files.end();
    const bool svg = std::find(result.files.begin(), result.files.end(), "plots/" + p.name + ".svg") != result.files.end();
    index += fmt::format("### {}\n\n", p.caption);
    if (png) index += fmt::format("![{}](plots/{}.png)\n\n", p.name, p.name);
    std::vector<std::string> links;
    if (png) links.push_back(fmt::format("[PNG](plots/{}.png)", p.name));
    if (svg) links.push_back(fmt::format("[SVG](plots/{}.svg)", p.name));
    links.push_back(fmt::format("[gnuplot script](plots/{}.gp)", p.name));
    links.push_back(fmt::format("[data](plots/{}.dat)", p.name));
    index += fmt::format("{}\n\n", fmt::join(links, " · "));
  }
  index += "## Files\n\n| file | what |\n|---|---|\n";
  for (const auto& e : entries) index += fmt::format("| [{}]({}) | {} |\n", e.path, e.path, e.what);
  index += "\nHow to read these numbers: see `src/analysis/README.md` in the egm sources.\n";
  return index;
}

}  // namespace

ReportResult write_report(const SweepData& data, const ReportOptions& options) {
  EGM_REQUIRE(!options.out_dir.empty(), ConfigError, "egm report needs an output folder (--out DIR)");
  ReportResult result;
  result.out_dir = options.out_dir;
  result.analysis = analyze_sweep(data, options.analysis);
  const SweepAnalysis& a = result.analysis;
  const std::string& out = options.out_dir;
  make_dirs(out + "/plots");

  std::vector<FileEntry> entries;
  auto write = [&](const std::string& name, const std::string& bytes, const std::string& what) {
    atomic_write_file(out + "/" + name, bytes);
    result.files.push_back(name);
    entries.push_back({name, what});
  };
  auto csv = [](const db::Table& t) { return db::format_table(t, db::Format::csv); };

  // Tables.
  std::string main_md = render_markdown_main(a);
  if (a.interaction) main_md += "\n```\n" + render_main_table(a) + "```\n";
  // Each claim's anytime-valid sequence beside the fixed-n interval (sequences.h); alpha = 1 - level.
  std::vector<ClaimSequence> sequences;
  SequenceOptions sequence_options;
  // A level of 0.5 or less would make alpha >= 0.5, which claim_sequences refuses.
  if (a.level > 0.5) {
    sequence_options.alpha = 1.0 - a.level;
    sequences = claim_sequences(a, data.spec.seeds, sequence_options);
    if (!sequences.empty())
      main_md += "\n```\n" + render_sequences_text(sequences, sequence_options, a.level) + "```\n";
  }
  write("main.md", main_md, "the paper's table: val loss mean ± CI (n), delta, published, interaction (Markdown)");
  write("main.tex", render_latex_main(a), "the same table in LaTeX (booktabs)");
  write("main.csv", csv(paper_table(a)), "the same table with full-precision numbers (CSV)");
  if (!sequences.empty())
    write("sequences.csv", csv(sequences_table(sequences, sequence_options)),
          "each claim's anytime-valid confidence sequence, look by look (valid after optional stopping)");
  write("analysis.md", render_markdown(a), "the full analysis (Markdown)");
  write("analysis.txt", render_text(a), "the full analysis as `egm analyze` prints it");
  write("analysis.json", to_json(a).dump(2) + "\n", "every number of the analysis (JSON)");
  write("summary.csv", csv(summary_table(a)), "per variant and metric: n, mean, SD, SE, t, interval");
  write("per_seed.csv", csv(per_seed_table(a)), "per variant and seed: final, best, full and autoregressive val loss");
  write("deltas.csv", csv(delta_table(a)), "deltas against the baseline: pairing, interval, t, Holm, Wilcoxon");
  write("interaction.csv", csv(interaction_table(a)), "the 2x2 interaction, quantity by quantity");
  write("published.csv", csv(published_table(a)), "published values against our intervals");
  write("excluded.csv", csv(excluded_table(a)), "cells left out, with the reason");
  write("mope_runs.csv", csv(mope_run_table(a)), "MoPE per run: sigma regions, boundary shares, movement, chosen k");
  write("mope_pairs.csv", csv(mope_pair_table(a)), "MoPE per pair: initial and learned omega, sigma, region");
  write("mope_k_scores.csv", csv(k_score_table(a)), "MoPE k-means: within-SS, gap, BIC, silhouette per k");
  write("gates.csv", csv(gate_table(a)), "gate parameters (EGA tau, alpha, ...) per layer and head over seeds");
  write("gates_by_layer.csv", csv(gate_layer_table(a)), "gate parameters per layer, summarised over heads");

  // Plots: scripts and data always; images when gnuplot runs. The figures
  // are the ones `egm serve` draws as SVG (figures.h).
  const std::vector<Figure> made = sweep_figures(data, a, sequences);
  draw_plots(made, options, result);
  // index.md last: it lists every file written and which images gnuplot made.
  atomic_write_file(out + "/index.md", index_markdown(data, result, made, entries));
  // First in the list: the file a reader opens.
  result.files.insert(result.files.begin(), "index.md");
  return result;
}

ReportResult write_report(db::ResultsDb& db, const std::string& sweep, const ReportOptions& options) {
  return write_report(load_sweep(db, sweep), options);
}

}  // namespace egm::analysis
