// One sweep as the analysis sees it: the parts of its stored spec that steer
// the statistics (variants, seeds, baseline, 2x2 factors, published values),
// every cell with its results and the setup (world size, backend) of the
// attempts that produced them, the eval_val curves and the learned
// parameters. Read from the results database in one read snapshot, so a
// coordinator writing meanwhile cannot make the pieces disagree.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/param_pack.h"
#include "db/results_db.h"
#include "db/reuse.h"
#include "run/outcome.h"
#include "spec/experiment_spec.h"

namespace egm::analysis {

// The number of measurements a statistic can be taken of: those of
// kMeasurementFields (run/outcome.h) with a `statistic` description.
constexpr int count_metrics() {
  int n = 0;
  for (const MeasurementField& f : kMeasurementFields) n += f.statistic != nullptr;
  return n;
}
// The position of the analysable measurement `name` among them; -1: none.
constexpr int metric_index(std::string_view name) {
  int k = 0;
  for (const MeasurementField& f : kMeasurementFields) {
    if (f.statistic == nullptr) continue;
    if (name == f.name) return k;
    ++k;
  }
  return -1;
}

// A cells column a statistic can be taken of: an index into the analysable
// measurements, in kMeasurementFields' order (the per-seed table's columns).
// The constants below name those the analysis itself asks for by name; a new
// measurement needs none to be offered by --metric.
class Metric {
 public:
  constexpr explicit Metric(int index) : index_(index) {}
  constexpr int index() const { return index_; }
  constexpr bool operator==(Metric o) const { return index_ == o.index_; }
  constexpr bool operator!=(Metric o) const { return index_ != o.index_; }
  constexpr bool operator<(Metric o) const { return index_ < o.index_; }
  static const Metric final_val, best_val, full_val, ar_val;

 private:
  int index_;
};
inline constexpr Metric Metric::final_val{metric_index("final_val")};
inline constexpr Metric Metric::best_val{metric_index("best_val")};
inline constexpr Metric Metric::full_val{metric_index("full_val")};
inline constexpr Metric Metric::ar_val{metric_index("ar_val")};
static_assert(metric_index("final_val") == 0, "final_val is the default metric and the first column");

const MeasurementField& metric_field(Metric metric);
const char* metric_name(Metric metric);
// One of all_metrics()' names; ConfigError lists them otherwise.
Metric parse_metric(std::string_view name);
const std::vector<Metric>& all_metrics();
// "final_val, best_val, full_val or ar_val": the choices, for --metric's help.
std::string metric_choices();
// One line for people: "val loss at the final step (random eval batches; the paper's number)".
const char* metric_description(Metric metric);

// The 2x2 design (a and b each change one factor of base, ab both): the spec's own type.
using spec::Factors;
// "a,b,ab,base" (four names, comma-separated); ConfigError otherwise.
Factors parse_factors(std::string_view text);

// Where an attempt ran; cells compared with each other must agree on it.
struct RunSetup {
  int world_size = 1;
  std::string backend;      // "none" (one rank), "mpi", "nccl" (run/device.h Backend); empty when not recorded
  std::string device_kind;  // "cpu", "cuda" (run/device.h device_kind); empty when not recorded
  std::string text() const;  // "world 2 / nccl on cuda"
  bool operator==(const RunSetup& o) const {
    return world_size == o.world_size && backend == o.backend && device_kind == o.device_kind;
  }
  bool operator!=(const RunSetup& o) const { return !(*this == o); }
  bool operator<(const RunSetup& o) const {
    if (world_size != o.world_size) return world_size < o.world_size;
    return backend != o.backend ? backend < o.backend : device_kind < o.device_kind;
  }
};

// The code and libraries behind a result: what trained it (runs.git_commit,
// source_diff_sha256, torch_version, device).
struct Provenance {
  std::string commit;         // "5fd6dc7a1b2c", "...-dirty", "unknown"
  std::string diff_sha256;    // the modification of a dirty build; empty: clean or not recorded
  std::string torch_version;
  std::string device_kind;    // "cpu", "cuda"
  std::string text() const;   // "egm 5fd6dc7a1b2c-dirty (diff 3f2a9c1b7d0e), LibTorch 2.11.0, cpu"
  bool operator==(const Provenance& o) const {
    return commit == o.commit && diff_sha256 == o.diff_sha256 && torch_version == o.torch_version &&
           device_kind == o.device_kind;
  }
  bool operator<(const Provenance& o) const { return text() < o.text(); }
};

struct CellData {
  db::CellRow row;
  // Setups of the attempts behind the result: the done attempt and, while an
  // attempt resumed from a checkpoint, the attempt before it. Empty when the
  // cell is not done.
  std::vector<RunSetup> setups;
  std::vector<Provenance> provenance;  // of the same attempts
  std::optional<double> value(Metric metric) const;
};

struct CurvePoint {
  int64_t step = 0;
  double loss = 0.0;
};

// One stored snapshot of a cell's learned parameters, kept as
// param_snapshots stores it: its step, its layout (the (module, layer, name,
// first idx, count) series, one object shared by every snapshot of that
// shape) and its values in layout order, 4-byte floats or, when a value is
// not exactly a float, 8-byte doubles (db/param_pack.h). No strings per
// value: a 100,000-cell sweep has some 40 million values to hold.
struct ParamSnapshot {
  int64_t step = 0;
  std::shared_ptr<const std::vector<db::ParamSeries>> layout;
  std::string data;      // size() values, 4 bytes (float) or 8 (double) each, little-endian
  bool doubles = false;  // 8-byte values

  std::size_t size() const { return data.size() / (doubles ? 8 : 4); }
  // The value at position i of the layout; NaN where the database holds NULL.
  double value(std::size_t i) const {
    if (doubles) {
      double v;
      std::memcpy(&v, data.data() + 8 * i, 8);
      return v;
    }
    float f;
    std::memcpy(&f, data.data() + 4 * i, 4);
    return f;
  }
  // f(series, idx, value) for every non-NULL value, in layout order.
  template <class F>
  void for_each(F&& f) const {
    std::size_t at = 0;
    for (const db::ParamSeries& s : *layout)
      for (int64_t i = 0; i < s.count; ++i, ++at) {
        const double v = value(at);
        if (!std::isnan(v)) f(s, s.first + i, v);
      }
  }
};

struct SweepData {
  db::SweepRow sweep;
  spec::ExperimentSpec spec;  // the stored spec (spec::read_stored_spec)
  std::vector<CellData> cells;                             // every cell, in spec order
  std::map<int64_t, std::vector<CurvePoint>> val_curves;   // cell id -> eval_val points by step (NULL losses skipped)
  // cell id -> its learned-parameter snapshots at step 0 and at each
  // module's last step with a value, by step ascending (what the analysis
  // reads; the evals between are not loaded)
  std::map<int64_t, std::vector<ParamSnapshot>> params;
  // Cells that took a finished run of their identity instead of training
  // (db/reuse.h), spec order: where each came from.
  std::vector<db::ReusedCell> reused;
};

// Reads sweep `name` (a superseded one by its NAME@ID). ConfigError naming the
// sweeps that exist when there is no such sweep. Without `with_params`,
// `params` stays empty (the coordinator's closing headline needs none, and a
// large sweep's parameters are most of what there is to read).
SweepData load_sweep(db::ResultsDb& db, const std::string& name, bool with_params = true);

}  // namespace egm::analysis
