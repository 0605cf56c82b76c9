// A sweep loaded for analysis: its stored spec, its cells and the attempts each
// result came from; the metric and factor names the analysis verbs accept.
#include "analysis/sweep_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "db/param_pack.h"
#include "db/sweep_reads.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace egm::analysis {

namespace {

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return "";
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

}  // namespace

const MeasurementField& metric_field(Metric metric) {
  // Built once from the one measurement list; Metric's index is a position in it.
  static const std::vector<const MeasurementField*> fields = [] {
    std::vector<const MeasurementField*> v;
    for (const MeasurementField& f : kMeasurementFields)
      if (f.statistic != nullptr) v.push_back(&f);
    return v;
  }();
  return *fields.at(static_cast<size_t>(metric.index()));
}

const char* metric_name(Metric metric) { return metric_field(metric).name; }

namespace {
// all_metrics()' names, in order: the choices --metric lists and a refusal names.
std::vector<std::string> metric_names() {
  std::vector<std::string> names;
  for (Metric m : all_metrics()) names.push_back(metric_name(m));
  return names;
}
}  // namespace

std::string metric_choices() {
  std::vector<std::string> names = metric_names();
  const std::string last = names.back();
  names.pop_back();
  return names.empty() ? last : fmt::format("{} or {}", fmt::join(names, ", "), last);
}

Metric parse_metric(std::string_view name) {
  const int index = metric_index(name);
  if (index >= 0) return Metric(index);
  EGM_THROW(ConfigError, "unknown metric '{}'; valid: {}", std::string(name), fmt::join(metric_names(), ", "));
}

const std::vector<Metric>& all_metrics() {
  static const std::vector<Metric> metrics = [] {
    std::vector<Metric> v;
    for (int i = 0; i < count_metrics(); ++i) v.push_back(Metric(i));
    return v;
  }();
  return metrics;
}

const char* metric_description(Metric metric) { return metric_field(metric).statistic; }

Factors parse_factors(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    // Each part trimmed of blanks, so "ega, mope, ega_mope, base" works too.
    parts.push_back(trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  // An empty name ("a,,ab,base", a trailing comma) is refused like a wrong count.
  const bool all_named = std::none_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); });
  EGM_REQUIRE(parts.size() == 4 && all_named, ConfigError,
              "--factors wants four variant names 'a,b,ab,base' (e.g. ega,mope,ega_mope,base), got '{}'",
              std::string(text));
  return Factors{parts[0], parts[1], parts[2], parts[3]};
}

std::string RunSetup::text() const {
  return fmt::format("world {} / {}{}", world_size, backend.empty() ? "backend not recorded" : backend,
                     device_kind.empty() ? "" : " on " + device_kind);
}

std::optional<double> CellData::value(Metric metric) const { return row.results.*metric_field(metric).value; }

std::string Provenance::text() const {
  std::string s = "egm " + commit;
  if (!diff_sha256.empty()) s += fmt::format(" (diff {})", diff_sha256.substr(0, 12));
  return s + fmt::format(", LibTorch {}, {}", torch_version.empty() ? "?" : torch_version, device_kind);
}

namespace {

// The attempts behind a done cell's result: the last done attempt, and while
// an attempt resumed from a checkpoint, the attempt before it (which wrote it).
std::vector<const db::RunRow*> result_attempts(const std::vector<const db::RunRow*>& attempts) {
  std::vector<const db::RunRow*> behind;
  // Attempts are in attempt order: the last done one holds the result.
  auto done = std::find_if(attempts.rbegin(), attempts.rend(),
                           [](const db::RunRow* r) { return r->status == db::RunStatus::done; });
  for (auto it = done; it != attempts.rend(); ++it) {
    behind.push_back(*it);
    // A fresh start ends the chain; a resumed attempt continues from the one before, which wrote its checkpoint.
    if (!(*it)->info.resumed_from_step) break;
  }
  return behind;
}

std::vector<RunSetup> result_setups(const std::vector<const db::RunRow*>& attempts) {
  std::vector<RunSetup> setups;
  for (const db::RunRow* r : result_attempts(attempts)) {
    const RunSetup s{r->info.world_size, to_string(r->info.backend), device_kind(r->info.device)};
    // Each distinct setup once: a chain run on one setup is one setup.
    if (std::find(setups.begin(), setups.end(), s) == setups.end()) setups.push_back(s);
  }
  return setups;
}

std::vector<Provenance> result_provenance(const std::vector<const db::RunRow*>& attempts) {
  std::vector<Provenance> out;
  for (const db::RunRow* r : result_attempts(attempts)) {
    const Provenance p{r->info.git_commit, r->info.source_diff_sha256.value_or(""), r->info.torch_version,
                       device_kind(r->info.device)};
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

// The learned parameters the analysis reads (packed snapshots, schema v5):
// per cell the snapshot at step 0 and, for every module, the last snapshot
// with a value of it (param_analysis.cpp reads the values at step 0 and at
// each module's last step, nothing in between). Usually two snapshots of a
// run's many evals: the rest are not read. Each kept as stored (its BLOB and
// a layout parsed once per distinct layout).
struct StoredLayout {
  std::shared_ptr<const std::vector<db::ParamSeries>> series;
  std::size_t size = 0;  // values
};

StoredLayout stored_layout(std::vector<db::ParamSeries> series) {
  StoredLayout l;
  for (const db::ParamSeries& s : series) l.size += static_cast<std::size_t>(s.count);
  l.series = std::make_shared<const std::vector<db::ParamSeries>>(std::move(series));
  return l;
}

ParamSnapshot make_snapshot(int64_t step, const StoredLayout& layout, std::string data, int64_t snapshot_id) {
  // Values are stored as float32 or float64: the byte count says which, and any other count is corrupt.
  EGM_REQUIRE(data.size() == 4 * layout.size || data.size() == 8 * layout.size, DbError,
              "param snapshot {}: {} bytes for {} values (neither 4 nor 8 bytes each)", snapshot_id, data.size(),
              layout.size);
  ParamSnapshot p;
  p.step = step;
  p.layout = layout.series;
  // An empty layout has 0 bytes either way: read as floats.
  p.doubles = layout.size > 0 && data.size() == 8 * layout.size;
  p.data = std::move(data);
  return p;
}

// The modules with at least one value (not NULL) in the snapshot.
void modules_with_values(const ParamSnapshot& p, std::set<std::string>& out, bool& added) {
  std::size_t at = 0;
  for (const db::ParamSeries& s : *p.layout) {
    for (int64_t i = 0; i < s.count; ++i)
      // NaN marks a value the snapshot does not have (NULL when it was stored).
      if (!std::isnan(p.value(at + static_cast<std::size_t>(i)))) {
        if (out.insert(s.module).second) added = true;
        break;
      }
    at += static_cast<std::size_t>(s.count);
  }
}

void read_used_snapshots(db::ResultsDb& results, int64_t sweep_id,
                         std::map<int64_t, std::vector<ParamSnapshot>>& out) {
  std::map<int64_t, StoredLayout> layouts;
  // Each distinct layout parsed once; the snapshots share it.
  for (const auto& [id, text] : db::param_layout_texts(results))
    layouts.emplace(id, stored_layout(db::parse_param_layout(text)));
  using Snapshot = db::SnapshotRef;
  std::map<int64_t, std::vector<Snapshot>> by_cell;  // steps ascending
  for (const Snapshot& s : db::param_snapshot_refs(results, sweep_id)) by_cell[s.cell_id].push_back(s);
  auto layout_of = [&](const Snapshot& s) -> const StoredLayout& {
    auto layout = layouts.find(s.layout_id);
    EGM_REQUIRE(layout != layouts.end(), DbError, "param snapshot {} has no layout {}", s.id, s.layout_id);
    return layout->second;
  };
  auto load = [&](const Snapshot& s) {
    return make_snapshot(s.step, layout_of(s), db::param_snapshot_data(results, s.id), s.id);
  };
  for (auto& [cell, snapshots] : by_cell) {
    std::set<std::string> modules;  // every module any snapshot of the cell has
    for (const Snapshot& s : snapshots)
      // Every module any snapshot of the cell has: the search below stops once each has its last value.
      for (const db::ParamSeries& series : *layout_of(s).series) modules.insert(series.module);
    std::map<int64_t, ParamSnapshot> used;  // step -> snapshot
    bool any_value = false;
    // The step-0 snapshot is kept whatever else is read: the initial values the learned ones are compared with.
    if (snapshots.front().step == 0) {
      auto it = used.emplace(0, load(snapshots.front())).first;
      std::set<std::string> in_it;
      modules_with_values(it->second, in_it, any_value);
    }
    // From the last snapshot back until every module has its last value.
    std::set<std::string> found;
    for (auto s = snapshots.rbegin(); s != snapshots.rend() && found.size() < modules.size(); ++s) {
      auto it = used.find(s->step);
      if (it == used.end()) it = used.emplace(s->step, load(*s)).first;
      bool adds = false;
      modules_with_values(it->second, found, adds);
      any_value = any_value || adds;
      if (!adds && s->step != 0) used.erase(it);  // nothing of it is any module's last value
    }
    // A cell whose snapshots hold no value at all has no parameters to analyse.
    if (!any_value) continue;
    std::vector<ParamSnapshot>& kept = out[cell];
    for (auto& [step, p] : used) kept.push_back(std::move(p));
  }
}

// Before schema v5 (one row per value): each (cell, step)'s rows packed into
// a snapshot as v5 stores it.
void read_param_rows(db::ResultsDb& results, int64_t sweep_id, std::map<int64_t, std::vector<ParamSnapshot>>& out) {
  std::map<std::string, StoredLayout> layouts;
  int64_t cell = 0, step = 0;
  std::vector<db::ParamEntry> entries;
  auto flush = [&] {
    if (entries.empty()) return;
    db::PackedParams packed = db::pack_params(std::move(entries));
    // pack_params took the entries; clear() makes the moved-from vector empty for the next (cell, step).
    entries.clear();
    auto it = layouts.find(packed.layout);
    if (it == layouts.end())
      it = layouts.emplace(packed.layout, stored_layout(db::parse_param_layout(packed.layout))).first;
    // -1: a snapshot packed here from pre-v5 rows has no id of its own.
    out[cell].push_back(make_snapshot(step, it->second, std::move(packed.data), -1));
  };
  for (db::ParamValue& v : db::param_rows_before_v5(results, sweep_id)) {
    // Rows come ordered by cell, then step (param_rows_before_v5): a change of either closes a snapshot.
    if (!entries.empty() && (v.cell_id != cell || v.step != step)) flush();
    cell = v.cell_id;
    step = v.step;
    entries.push_back({std::move(v.module), v.layer, v.idx, std::move(v.name), v.value});
  }
  flush();
}

}  // namespace

SweepData load_sweep(db::ResultsDb& results, const std::string& name, bool with_params) {
  // One read snapshot for everything below.
  db::Transaction snapshot(results.connection(), db::Transaction::Kind::deferred);
  std::optional<db::SweepRow> sweep = results.find_sweep(name);
  if (!sweep) {
    std::vector<std::string> names;
    for (const auto& s : results.list_sweeps(true)) names.push_back(s.name);
    EGM_THROW(ConfigError, "no sweep named '{}' in {}{}{}", name, results.path(), names.empty() ? "" : "; sweeps: ",
              fmt::join(names, ", "));
  }
  SweepData data;
  data.sweep = *sweep;
  // The spec as stored when the sweep was created, not today's file: the analysis matches what ran.
  data.spec = spec::read_stored_spec(sweep->spec_json);

  db::CellFilter filter;
  filter.sweep_id = sweep->id;
  const std::vector<db::CellRow> cells = results.list_cells(filter);
  const std::vector<db::RunRow> runs = results.list_runs(filter);
  std::map<int64_t, std::vector<const db::RunRow*>> runs_by_cell;  // in attempt order
  for (const auto& r : runs) runs_by_cell[r.cell_id].push_back(&r);
  for (const auto& c : cells) {
    CellData d;
    d.row = c;
    // Only a done cell has a result, so only its attempts have a setup and provenance to report.
    if (c.status == db::CellStatus::done) {
      d.setups = result_setups(runs_by_cell[c.id]);
      d.provenance = result_provenance(runs_by_cell[c.id]);
    }
    data.cells.push_back(std::move(d));
  }
  data.reused = db::reused_cells(results, sweep->id);

  // Only the eval_val curves are loaded: the val-curve figure and report need every cell's.
  for (const db::LossPoint& p : db::split_losses(results, sweep->id, MetricSplit::eval_val))
    data.val_curves[p.cell_id].push_back({p.step, p.loss});

  // Schema v5 packs each snapshot into one BLOB; older files have one row per value, packed here the same way.
  if (with_params && results.schema_version() >= 5)
    read_used_snapshots(results, sweep->id, data.params);
  else if (with_params)
    read_param_rows(results, sweep->id, data.params);
  snapshot.commit();  // nothing was written; ends the read snapshot
  return data;
}

}  // namespace egm::analysis
