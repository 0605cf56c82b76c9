// Typed reads of one sweep for the verbs that present it (egm analyze and
// report, egm serve's cell page, egm export's TensorBoard files): each a
// function over a ResultsDb that returns rows of named, typed fields, so no
// SQL is written outside src/db (egm query's gate and the migrations aside).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/results_db.h"
#include "db/table_format.h"

namespace egm::db {

// ---- cells

// The id of the cell `key` of a sweep; none when it has no such cell.
std::optional<int64_t> find_cell(ResultsDb& db, int64_t sweep_id, const std::string& key);
// Every cell id of a sweep, in spec order (position).
std::vector<int64_t> cell_ids(ResultsDb& db, int64_t sweep_id);

// ---- the cell page's tables (egm serve): shown and downloaded as they are

enum class CellTable {
  attempts,  // attempt, status, host, device, world_size, backend, started_utc, ended_utc, seconds, ...
  events,    // time_utc, kind, attempt, step, message
  metrics,   // step, split, loss, lr, tokens_per_s, attempt, time; in (split, step) order
  params,    // step, module, layer, idx, name, value
  learned,   // module, layer, idx, name, at_step_0, learned, step: each parameter at step 0 and at the last step
};
// The downloadable tables by name: attempts, events, metrics, params; none for any other.
std::optional<CellTable> parse_cell_download(std::string_view name);
Table cell_table(ResultsDb& db, CellTable table, int64_t cell_id);

// ---- the analysis

// One point of a loss curve.
struct LossPoint {
  int64_t cell_id = 0;
  int64_t step = 0;
  double loss = 0;
};
// The losses of `split` over the sweep's cells, by cell then step; a loss that
// is NULL or stored as text (a file edited elsewhere) is no point.
std::vector<LossPoint> split_losses(ResultsDb& db, int64_t sweep_id, MetricSplit split);

// One attempt with what the compute statement counts (analysis/compute.h).
struct AttemptCompute {
  int64_t cell_id = 0;
  std::string variant;
  std::string device;  // as stored ("cpu", "cuda:0")
  std::optional<int64_t> world_size;
  double started_at = 0;
  std::optional<double> ended_at;     // none: still running
  std::optional<int64_t> threads;     // schema v7; none before
  std::optional<std::string> gpu_name;
  bool reused = false;  // schema v11: a link to a finished run of the same identity (db/reuse.h), not trained here
};
// The sweep's attempts in spec order, then attempt order.
std::vector<AttemptCompute> attempt_compute(ResultsDb& db, int64_t sweep_id);

// Learned parameters as stored (schema v5 on): the layouts' text by id, each
// snapshot of a sweep (without its data), and one snapshot's data.
struct SnapshotRef {
  int64_t cell_id = 0;
  int64_t id = 0;
  int64_t step = 0;
  int64_t layout_id = 0;
};
std::map<int64_t, std::string> param_layout_texts(ResultsDb& db);
// By cell, then step.
std::vector<SnapshotRef> param_snapshot_refs(ResultsDb& db, int64_t sweep_id);
// The packed values of snapshot `id` (a DbError when it is gone).
std::string param_snapshot_data(ResultsDb& db, int64_t id);
// Before schema v5: the sweep's rows of the params table that hold a value,
// by cell, step, module, layer, idx and name.
std::vector<ParamValue> param_rows_before_v5(ResultsDb& db, int64_t sweep_id);

// ---- TensorBoard's reads: every number strict

// A stored value that is neither NULL nor a number (text in a REAL column: a
// file edited elsewhere) is a DbError naming the cell and the value, never 0.

// What a cell ended with.
struct CellEnd {
  int64_t id = 0;
  std::string key;
  bool done = false;  // status 'done'
  std::optional<double> final_val;
  std::optional<double> best_val;
  std::optional<int64_t> final_step;
  double updated_at = 0;
};
// The sweep's cells in spec order.
std::vector<CellEnd> cell_ends(ResultsDb& db, int64_t sweep_id);

// One metric point of a cell.
struct CellMetric {
  std::string split;  // as stored (a split egm does not know is kept)
  int64_t step = 0;
  std::optional<double> loss;
  std::optional<double> lr;
  std::optional<double> tokens_per_s;
  double time = 0;
};
// Calls `each` with every metric of the cell in (split, step) order (the primary key's: no sort).
void for_each_metric(ResultsDb& db, int64_t cell_id, const std::function<void(const CellMetric&)>& each);

}  // namespace egm::db
