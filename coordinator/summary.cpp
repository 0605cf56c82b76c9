#include "coordinator/summary.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "analysis/render.h"

namespace egm::coordinator {
namespace {

struct Moments {
  int64_t n = 0;
  double mean = NAN;
  double sd = NAN;
};

Moments moments(const std::vector<double>& xs) {
  Moments m;
  m.n = static_cast<int64_t>(xs.size());
  if (xs.empty()) return m;
  double sum = 0;
  for (double x : xs) sum += x;
  m.mean = sum / static_cast<double>(xs.size());
  if (xs.size() >= 2) {
    double ss = 0;
    for (double x : xs) ss += (x - m.mean) * (x - m.mean);
    m.sd = std::sqrt(ss / static_cast<double>(xs.size() - 1));
  }
  return m;
}

db::Value value_or_null(double v) { return std::isfinite(v) ? db::Value(v) : db::Value(); }

}  // namespace

db::Table variant_summary(const std::vector<db::CellRow>& cells, const spec::ExperimentSpec& spec) {
  std::map<std::string, std::vector<double>> final_vals, full_vals;
  for (const auto& c : cells) {
    if (c.status != db::CellStatus::done) continue;
    if (c.results.final_val && std::isfinite(*c.results.final_val)) final_vals[c.variant].push_back(*c.results.final_val);
    if (c.results.full_val && std::isfinite(*c.results.full_val)) full_vals[c.variant].push_back(*c.results.full_val);
  }
  const std::string baseline = spec.baseline.value_or("");
  const double base_mean = final_vals.count(baseline) ? moments(final_vals[baseline]).mean : NAN;
  const bool published_final = spec.published && spec.published->metric == "final_val";

  db::Table t;
  t.columns = {"variant", "n", "final_val", "sd", baseline.empty() ? "delta" : "delta_vs_" + baseline, "full_val",
               "published"};
  for (const auto& variant : spec.variants) {
    const Moments f = moments(final_vals[variant]);
    const Moments full = moments(full_vals[variant]);
    db::Value published;
    if (published_final) {
      auto it = spec.published->values.find(variant);
      if (it != spec.published->values.end()) published = it->second;
    }
    t.rows.push_back({variant, f.n, value_or_null(f.mean), value_or_null(f.sd), value_or_null(f.mean - base_mean),
                      value_or_null(full.mean), published});
  }
  return t;
}

std::vector<std::string> failed_cell_lines(const std::vector<db::CellRow>& cells) {
  std::vector<std::string> lines;
  for (const auto& c : cells) {
    if (c.status != db::CellStatus::failed || c.failures < c.max_attempts) continue;
    lines.push_back(fmt::format("{}: failed {} time{}, no retries left: {}", c.key, c.failures,
                                c.failures == 1 ? "" : "s", c.last_error.value_or("(no error text)")));
  }
  return lines;
}

void print_sweep_summary(db::ResultsDb& db, const std::vector<db::CellRow>& cells, const spec::ExperimentSpec& spec,
                         std::FILE* out) {
  std::string table;
  try {
    table = analysis::render_main_table(db, spec.name);
  } catch (const std::exception& e) {
    db::FormatOptions options;
    options.float_digits = 5;
    options.null_text = "-";
    const std::string source =
        spec.published && spec.published->metric == "final_val" ? "; published: " + spec.published->source : "";
    table = fmt::format("(the analysis failed: {})\nfinal validation loss per variant (mean and sd over seeds{}):\n{}",
                        e.what(), source, db::format_table(variant_summary(cells, spec), db::Format::table, options));
  }
  std::fprintf(out, "\n%s", table.c_str());
  const auto failed = failed_cell_lines(cells);
  if (!failed.empty()) {
    std::fprintf(out, "\n%zu cell%s failed for good:\n", failed.size(), failed.size() == 1 ? "" : "s");
    for (const auto& l : failed) std::fprintf(out, "  %s\n", l.c_str());
  }
  std::fflush(out);
}

}  // namespace egm::coordinator
