// The compute statement: each attempt's wall time times its ranks and threads
// (core-hours) or GPU-hours, per cell, variant and claim; reused cells counted apart.
#include "analysis/compute.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "analysis/sweep_analysis.h"
#include "db/reuse.h"
#include "db/sweep_reads.h"
#include "util/error.h"

namespace egm::analysis {
namespace {

// Hours for people: two significant digits, at least one decimal (0.0042, 0.41, 3.1, 27.0, 1234.5).
std::string hours_text(double seconds) {
  const double h = seconds / 3600;
  // Exactly 0 prints as 0: log10 below has no value for it.
  if (h == 0) return "0";
  if (h >= 10) return fmt::format("{:.1f}", h);
  // Under 10 hours, decimals enough for two significant digits: 0.0042 takes 4, 0.41 takes 2, 3.1 takes 1.
  const int decimals = std::max(1, 1 - static_cast<int>(std::floor(std::log10(h))));
  return fmt::format("{:.{}f}", h, decimals);
}

// A vector, not a map: variants list in cell order and claims in the analysis's order, as first seen.
ComputeTotals& slot(std::vector<std::pair<std::string, ComputeTotals>>& list, const std::string& name) {
  for (auto& [n, t] : list)
    if (n == name) return t;
  list.emplace_back(name, ComputeTotals{});
  return list.back().second;
}

}  // namespace

void ComputeTotals::add(const ComputeTotals& o) {
  runs += o.runs;
  running += o.running;
  core_seconds += o.core_seconds;
  // GPU time is kept per GPU model: an hour on one model is not an hour on another.
  for (const auto& [name, s] : o.gpu_seconds) gpu_seconds[name] += s;
  runs_without_threads += o.runs_without_threads;
  reused += o.reused;
  saved_core_seconds += o.saved_core_seconds;
  for (const auto& [name, sec] : o.saved_gpu_seconds) saved_gpu_seconds[name] += sec;
}

std::vector<Claim> claims_of(const SweepAnalysis& a) {
  std::vector<Claim> claims;
  for (const DeltaResult& d : a.deltas)
    claims.push_back({fmt::format("delta({})", d.variant), {a.baseline, d.variant}});
  if (a.interaction) {
    const Factors& f = a.interaction->factors;
    claims.push_back({"interaction", {f.a, f.b, f.ab, f.base}});
  }
  return claims;
}

ComputeStatement compute_statement(db::ResultsDb& db, const std::string& sweep, const std::vector<Claim>& claims) {
  const std::optional<db::SweepRow> row = db.find_sweep(sweep);
  EGM_REQUIRE(row.has_value(), ConfigError, "no sweep named '{}' in {}", sweep, db.path());
  ComputeStatement out;
  out.sweep = sweep;
  std::map<std::string, ComputeTotals> by_variant;
  std::map<int64_t, db::ReusedCell> reused;
  // By cell id, to find each reused attempt's original run below.
  for (db::ReusedCell& r : db::reused_cells(db, row->id)) reused.emplace(r.cell_id, std::move(r));
  for (const db::AttemptCompute& a : db::attempt_compute(db, row->id)) {
    ComputeTotals t;
    if (a.reused) {
      // A linked run costs nothing here; what its original cost is what reuse saved.
      t.reused = 1;
      if (auto it = reused.find(a.cell_id); it != reused.end() && it->second.original_seconds) {
        const db::ReusedCell& r = it->second;
        // Costed like a run of its own (below): wall time times ranks, times threads on a CPU.
        const double cost = std::max(0.0, *r.original_seconds) * static_cast<double>(r.original_world_size);
        // rfind at 0 is "starts with": cuda, cuda:0, ... are GPU time.
        if (r.original_device.rfind("cuda", 0) == 0)
          t.saved_gpu_seconds[r.original_gpu_name.value_or("GPU")] = cost;
        else
          t.saved_core_seconds = cost * static_cast<double>(r.original_threads.value_or(1));
      }
    } else if (!a.ended_at) {
      // No end time: still running (or its coordinator died); what it costs is not known yet.
      t.running = 1;
    } else {
      // A clock stepped back between start and end must not make a negative cost.
      const double seconds = std::max(0.0, *a.ended_at - a.started_at);
      const double ranks = static_cast<double>(a.world_size.value_or(1));
      t.runs = 1;
      if (a.device.rfind("cuda", 0) == 0) {
        t.gpu_seconds[a.gpu_name.value_or("GPU")] = seconds * ranks;
      } else {
        // Runs before schema v7 recorded no thread count: counted at 1 thread, and the line says so.
        if (!a.threads) t.runs_without_threads = 1;
        t.core_seconds = seconds * ranks * static_cast<double>(a.threads.value_or(1));
      }
    }
    out.cells[a.cell_id].add(t);
    slot(out.variants, a.variant).add(t);
    out.total.add(t);
  }
  for (const Claim& claim : claims) {
    ComputeTotals& t = slot(out.claims, claim.name);
    // A claim costs every variant it compares, so a shared variant (the baseline) counts in each claim.
    for (const std::string& v : claim.variants)
      for (const auto& [name, totals] : out.variants)
        if (name == v) t.add(totals);
  }
  return out;
}

std::string compute_line(const ComputeTotals& t) {
  std::string s = fmt::format("{} run{}", t.runs, t.runs == 1 ? "" : "s");
  std::vector<std::string> parts;
  for (const auto& [name, seconds] : t.gpu_seconds)
    parts.push_back(fmt::format("{} GPU-hours on {}", hours_text(seconds), name));
  // CPU time is also shown when there is no GPU time, so a line never lists no compute at all.
  if (t.core_seconds > 0 || t.gpu_seconds.empty())
    parts.push_back(fmt::format("{} core-hours of CPU", hours_text(t.core_seconds)));
  for (size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? ", " : "; ") + parts[i];
  if (t.runs_without_threads > 0)
    s += fmt::format(" ({} CPU run{} without a recorded thread count, counted at 1 thread)", t.runs_without_threads,
                     t.runs_without_threads == 1 ? "" : "s");
  if (t.running > 0) s += fmt::format("; {} still running, not counted", t.running);
  if (t.reused > 0) {
    std::vector<std::string> saved;
    // What reuse saved, per GPU model and for CPUs, as the costs above.
    for (const auto& [name, seconds] : t.saved_gpu_seconds)
      saved.push_back(fmt::format("{} GPU-hours on {}", hours_text(seconds), name));
    if (t.saved_core_seconds > 0 || t.saved_gpu_seconds.empty())
      saved.push_back(fmt::format("{} core-hours of CPU", hours_text(t.saved_core_seconds)));
    s += fmt::format("; {} reused from earlier runs, not counted (reuse saved {})", t.reused,
                     fmt::format("{}", fmt::join(saved, "; ")));
  }
  return s;
}

std::string render_compute_text(const ComputeStatement& st) {
  std::string s = fmt::format("compute: this table: {}\n", compute_line(st.total));
  for (const auto& [name, t] : st.claims) s += fmt::format("  {}: {}\n", name, compute_line(t));
  for (const auto& [name, t] : st.variants) s += fmt::format("  {}: {}\n", name, compute_line(t));
  return s;
}

db::Table compute_table(const ComputeStatement& st) {
  db::Table t;
  t.columns = {"scope", "name", "runs", "running", "core_hours", "gpu_hours", "gpu"};
  auto add = [&](const std::string& scope, const std::string& name, const ComputeTotals& c) {
    double gpu = 0;
    std::string names;
    for (const auto& [n, seconds] : c.gpu_seconds) {
      gpu += seconds;
      names += (names.empty() ? "" : ", ") + n;
    }
    // Hours in the table; gpu_hours sums every GPU model, and gpu names them.
    t.rows.push_back({scope, name, c.runs, c.running, c.core_seconds / 3600, gpu / 3600, names});
  };
  add("sweep", st.sweep, st.total);
  for (const auto& [name, c] : st.claims) add("claim", name, c);
  for (const auto& [name, c] : st.variants) add("variant", name, c);
  return t;
}

}  // namespace egm::analysis
