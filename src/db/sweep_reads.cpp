// Typed reads of one sweep for analyze, report, serve's cell page and the
// TensorBoard export (sweep_reads.h); the SQL each of them runs.
#include "db/sweep_reads.h"

#include <fmt/format.h>

#include "db/tables.h"
#include "util/error.h"

namespace egm::db {
namespace {

// A number as stored: NULL is none; text or a blob (a file edited elsewhere) a DbError.
std::optional<double> strict_number(const Statement& s, int column, const char* what, int64_t cell_id,
                                    const std::string& path) {
  bool mismatch = false;
  std::optional<double> v = s.opt_number(column, &mismatch);
  EGM_REQUIRE(!mismatch, DbError,
              "{}: {} of cell {} is stored as {}, not a number (was the database edited elsewhere?)", path, what,
              cell_id, s.text(column).substr(0, 40));
  return v;
}

// A running attempt's seconds count up to now (strftime('%s', 'now') is UTC seconds, as started_at).
constexpr const char* kAttemptsSql =
    "SELECT attempt, status, host, device, world_size, backend, datetime(started_at, 'unixepoch') AS started_utc, "
    "datetime(ended_at, 'unixepoch') AS ended_utc, round(coalesce(ended_at, strftime('%s', 'now')) - started_at, 1) "
    "AS seconds, resumed_from_step, torch_version, git_commit, error FROM runs WHERE cell_id = ? ORDER BY attempt";
// events.step came with schema v4; an older file (read-only) shows it empty.
std::string events_sql(int schema_version) {
  return fmt::format(
      "SELECT datetime(e.time, 'unixepoch') AS time_utc, e.kind, r.attempt, {} AS step, e.message FROM events e "
      "LEFT JOIN runs r ON r.id = e.run_id WHERE e.cell_id = ? ORDER BY e.time, e.id",
      schema_version >= 4 ? "e.step" : "NULL");
}
// The join names each point's attempt, so a resumed cell shows which attempt wrote which steps (a
// linked cell's points, read through row_sources, show its link's attempt).
std::string metrics_sql(int schema_version) {
  return "SELECT m.step, m.split, m.loss, m.lr, m.tokens_per_s, r.attempt, m.time FROM " +
         row_sources_from(schema_version) +
         " x JOIN metrics m ON m.cell_id = x.rows_cell_id JOIN runs r ON r.id = coalesce(x.link_run_id, m.run_id) "
         "WHERE x.cell_id = ?1 ORDER BY m.split, m.step";
}
// params is a view over the packed snapshots from schema v5 on (param_values); the same SQL reads either.
constexpr const char* kParamsSql =
    "SELECT p.step, p.module, p.layer, p.idx, p.name, p.value FROM params p WHERE p.cell_id = ? "
    "ORDER BY p.step, p.module, p.layer, p.name, p.idx";
// Learned parameters at step 0 and at the cell's last recorded step, side by side.
constexpr const char* kLearnedSql =
    "SELECT module, layer, idx, name, "
    "(SELECT value FROM params q WHERE q.cell_id = p.cell_id AND q.module = p.module AND q.layer = p.layer AND "
    "q.idx = p.idx AND q.name = p.name AND q.step = 0) AS at_step_0, value AS learned, step "
    "FROM params p WHERE p.cell_id = ?1 AND p.step = (SELECT max(step) FROM params WHERE cell_id = ?1) "
    "ORDER BY module, layer, name, idx";

}  // namespace

// nullopt when the sweep has no cell with that key (a mistyped key in a URL or on the command line).
std::optional<int64_t> find_cell(ResultsDb& db, int64_t sweep_id, const std::string& key) {
  Statement s = db.connection().prepare("SELECT id FROM cells WHERE sweep_id = ? AND key = ?");
  s.bind_all(sweep_id, key);
  if (s.step()) return s.int64(0);
  return std::nullopt;
}

// In the spec's order (position), the order every report lists cells in.
std::vector<int64_t> cell_ids(ResultsDb& db, int64_t sweep_id) {
  Statement s = db.connection().prepare("SELECT id FROM cells WHERE sweep_id = ?1 ORDER BY position");
  s.bind(1, sweep_id);
  std::vector<int64_t> ids;
  while (s.step()) ids.push_back(s.int64(0));
  return ids;
}

std::optional<CellTable> parse_cell_download(std::string_view name) {
  if (name == "attempts") return CellTable::attempts;
  if (name == "events") return CellTable::events;
  if (name == "metrics") return CellTable::metrics;
  if (name == "params") return CellTable::params;
  return std::nullopt;
}

Table cell_table(ResultsDb& db, CellTable table, int64_t cell_id) {
  // Declared outside the switch: sql points into it until the statement is prepared.
  const std::string events = events_sql(db.schema_version()), metrics = metrics_sql(db.schema_version());
  const char* sql = nullptr;
  switch (table) {
    case CellTable::attempts: sql = kAttemptsSql; break;
    case CellTable::events: sql = events.c_str(); break;
    case CellTable::metrics: sql = metrics.c_str(); break;
    case CellTable::params: sql = kParamsSql; break;
    case CellTable::learned: sql = kLearnedSql; break;
  }
  Statement s = db.connection().prepare(sql);
  s.bind(1, cell_id);
  return read_rows(s);
}

std::vector<LossPoint> split_losses(ResultsDb& db, int64_t sweep_id, MetricSplit split) {
  Statement s = db.connection().prepare(
      "SELECT x.cell_id, m.step, m.loss FROM cells c JOIN " + row_sources_from(db.schema_version()) +
      " x ON x.cell_id = c.id JOIN metrics m ON m.cell_id = x.rows_cell_id "
      // Grouped by cell, each curve in step order: the caller splits the points into curves at each new cell_id.
      "WHERE c.sweep_id = ? AND m.split = ? AND m.loss IS NOT NULL ORDER BY x.cell_id, m.step");
  s.bind_all(sweep_id, std::string(to_string(split)));
  std::vector<LossPoint> points;
  while (s.step())  // a loss stored as text (a file edited elsewhere) is no point of a curve
    if (std::optional<double> loss = s.opt_number(2)) points.push_back({s.int64(0), s.int64(1), *loss});
  return points;
}

// Every attempt, failed and interrupted ones too: they used compute as well.
std::vector<AttemptCompute> attempt_compute(ResultsDb& db, int64_t sweep_id) {
  const bool v7 = db.schema_version() >= 7;  // threads and gpu_name came with v7
  Statement s = db.connection().prepare(
      std::string("SELECT c.id, c.variant, r.device, r.world_size, r.started_at, r.ended_at, ") +
      (v7 ? "r.threads, r.gpu_name, " : "NULL, NULL, ") +
      (db.schema_version() >= 11 ? "r.reused_from IS NOT NULL" : "0") +  // reuse came with v11
      " FROM cells c JOIN runs r ON r.cell_id = c.id WHERE c.sweep_id = ?1 ORDER BY c.position, r.attempt");
  s.bind(1, sweep_id);
  std::vector<AttemptCompute> rows;
  while (s.step())
    rows.push_back({s.int64(0), s.text(1), s.text(2), s.opt_int64(3), s.real(4), s.opt_real(5), s.opt_int64(6),
                    s.opt_text(7), s.int64(8) != 0});
  return rows;
}

// Every layout of the file, not only this sweep's: there are few, and they are shared across sweeps.
std::map<int64_t, std::string> param_layout_texts(ResultsDb& db) {
  Statement s = db.connection().prepare("SELECT id, layout FROM param_layouts");
  std::map<int64_t, std::string> layouts;
  while (s.step()) layouts.emplace(s.int64(0), s.text(1));
  return layouts;
}

std::vector<SnapshotRef> param_snapshot_refs(ResultsDb& db, int64_t sweep_id) {
  Statement s = db.connection().prepare(
      "SELECT x.cell_id, s.id, s.step, s.layout_id FROM cells c JOIN " + row_sources_from(db.schema_version()) +
      " x ON x.cell_id = c.id JOIN param_snapshots s ON s.cell_id = x.rows_cell_id "
      "WHERE c.sweep_id = ? ORDER BY x.cell_id, s.step");
  s.bind(1, sweep_id);
  std::vector<SnapshotRef> refs;
  while (s.step()) refs.push_back({s.int64(0), s.int64(1), s.int64(2), s.int64(3)});
  return refs;
}

// One blob at a time, so a TensorBoard export of a large sweep never holds every snapshot in memory.
std::string param_snapshot_data(ResultsDb& db, int64_t id) {
  CachedStatement s = db.connection().cached("SELECT data FROM param_snapshots WHERE id = ?");
  s->bind(1, id);
  EGM_REQUIRE(s->step(), DbError, "param snapshot {} vanished while reading", id);
  return s->blob(0);
}

// Before schema v5 params was a table with one row per value; NULL values are left out.
std::vector<ParamValue> param_rows_before_v5(ResultsDb& db, int64_t sweep_id) {
  Statement s = db.connection().prepare(
      "SELECT p.cell_id, p.step, p.module, p.layer, p.idx, p.name, p.value FROM params p "
      "JOIN cells c ON c.id = p.cell_id WHERE c.sweep_id = ? AND p.value IS NOT NULL "
      "ORDER BY p.cell_id, p.step, p.module, p.layer, p.idx, p.name");
  s.bind(1, sweep_id);
  std::vector<ParamValue> rows;
  while (s.step()) {
    ParamValue v;
    v.cell_id = s.int64(0);
    v.step = s.int64(1);
    v.module = s.text(2);
    v.layer = s.int64(3);
    v.idx = s.int64(4);
    v.name = s.text(5);
    v.value = s.real(6);
    rows.push_back(std::move(v));
  }
  return rows;
}

std::vector<CellEnd> cell_ends(ResultsDb& db, int64_t sweep_id) {
  Statement s = db.connection().prepare(
      "SELECT id, key, status, final_val, best_val, final_step, updated_at FROM cells WHERE sweep_id = ?1 "
      "ORDER BY position");
  s.bind(1, sweep_id);
  std::vector<CellEnd> cells;
  while (s.step()) {
    CellEnd c;
    c.id = s.int64(0);
    c.key = s.text(1);
    // The text compare avoids parse_cell_status, which would throw on a status edited by hand.
    c.done = s.text(2) == to_string(CellStatus::done);
    c.final_step = s.opt_int64(5);
    if (c.done && c.final_step) {  // what a done cell ended with: read only where it is used
      c.updated_at = strict_number(s, 6, "updated_at", c.id, db.path()).value_or(0);
      c.final_val = strict_number(s, 3, "final_val", c.id, db.path());
      c.best_val = strict_number(s, 4, "best_val", c.id, db.path());
    }
    cells.push_back(std::move(c));
  }
  return cells;
}

// CachedStatement: called once per cell of a sweep, so the SELECT is prepared once.
void for_each_metric(ResultsDb& db, int64_t cell_id, const std::function<void(const CellMetric&)>& each) {
  // The cell's rows in primary-key order (split, step): no sort.
  CachedStatement s = db.connection().cached(
      "SELECT m.split, m.step, m.loss, m.lr, m.tokens_per_s, m.time FROM " + row_sources_from(db.schema_version()) +
      " x JOIN metrics m ON m.cell_id = x.rows_cell_id WHERE x.cell_id = ?1 ORDER BY m.split, m.step");
  s->bind(1, cell_id);
  const std::string& path = db.path();
  // One CellMetric reused across rows; `each` copies what it keeps.
  CellMetric m;
  while (s->step()) {
    m.split = s->text(0);
    m.step = s->int64(1);
    m.time = strict_number(*s, 5, "a metric's time", cell_id, path).value_or(0);
    m.loss = strict_number(*s, 2, "a loss", cell_id, path);
    const bool train = m.split == to_string(MetricSplit::train);  // only train rows carry these
    m.lr = train ? strict_number(*s, 3, "a learning rate", cell_id, path) : std::nullopt;
    m.tokens_per_s = train ? strict_number(*s, 4, "a tokens/s", cell_id, path) : std::nullopt;
    each(m);
  }
}

}  // namespace egm::db
