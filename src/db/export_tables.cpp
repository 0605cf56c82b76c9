// egm export's tables (export_tables.h): their columns, where each is read
// from, and the reading of their rows.
#include "db/export_tables.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <memory>
#include <utility>

#include "db/param_pack.h"
#include "db/tables.h"
#include "util/error.h"

namespace egm::db {
namespace {

using T = ColumnType;

// A computed column: an SQL expression rather than a stored column, present since schema `since`.
SourceColumn col(std::string name, T type, std::string expr, int since = 1) {
  return SourceColumn{{std::move(name), type}, std::move(expr), since};
}

// The export's column `as` (default: its own name) read from `column` of
// stored table `table` (aliased `alias` in the FROM clause).
struct StoredFrom {
  const char* table;
  const char* alias;
  SourceColumn operator()(const std::string& column, const std::string& as = "") const {
    // The type and the schema version come from db/tables.h, so the export cannot drift from the schema.
    const StoredColumn& stored = stored_column(table, column);
    return SourceColumn{
        {as.empty() ? column : as, stored.export_type()}, std::string(alias) + "." + column, stored.since};
  }
};
StoredFrom stored_from(const char* table, const char* alias) { return {table, alias}; }

// The value as the column's type says. SQLite's affinity stores numbers in
// REAL and INTEGER columns as such; an integer in a REAL column (a file edited
// by hand) converts exactly. What cannot convert exactly (text in a number
// column, a real that is no 64-bit integer in an INTEGER one: a file edited
// elsewhere) is refused by the caller, which names the table, column and row;
// nullopt here.
std::optional<Value> typed(const Value& v, ColumnType type) {
  if (std::holds_alternative<std::monostate>(v)) return v;
  switch (type) {
    case T::int64:
      if (const double* d = std::get_if<double>(&v)) {
        // 2^63 is exactly representable; every double below it in magnitude casts without overflow.
        if (!(std::trunc(*d) == *d && *d >= -9223372036854775808.0 && *d < 9223372036854775808.0)) return std::nullopt;
        return static_cast<int64_t>(*d);
      }
      if (std::holds_alternative<std::string>(v)) return std::nullopt;
      return v;
    case T::float64:
      if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
      if (std::holds_alternative<std::string>(v)) return std::nullopt;
      return v;
    case T::timestamp: {
      // UNIX seconds within +-1e11 (about year 5000): a time the sinks can turn into microseconds and dates.
      double t = 0;
      if (const int64_t* i = std::get_if<int64_t>(&v)) t = static_cast<double>(*i);
      else if (const double* d = std::get_if<double>(&v)) t = *d;
      else return std::nullopt;
      if (!(std::abs(t) <= 1e11)) return std::nullopt;
      return t;
    }
    // A number in a text column is printed rather than refused: text can hold any value.
    case T::text:
      if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
      if (const double* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
      return v;
  }
  return v;
}

// How the error for an unconvertible value names it: its text (cut short) or its number.
std::string show_value(const Value& v) {
  if (const std::string* s = std::get_if<std::string>(&v)) {
    // Cut short; egm's error line escapes its control bytes.
    return "text '" + (s->size() > 40 ? s->substr(0, 37) + "..." : *s) + "'";
  }
  if (const double* d = std::get_if<double>(&v)) return fmt::format("the real {}", *d);
  return "a value";
}

// The learned parameters of schema v5 on, one cell at a time: one row per
// value, unpacked from the (cell, step) snapshots (UNIQUE(cell_id, step) reads
// them in step order); each layout parsed once per export.
class PackedParamsReader {
 public:
  explicit PackedParamsReader(int schema_version) : schema_version_(schema_version) {}

  int64_t operator()(Connection& connection, int64_t cell_id, const RowSink& sink) {
    // Created on the first call, then shared by the copies std::function makes.
    if (layouts_ == nullptr) layouts_ = std::make_shared<std::map<int64_t, std::vector<ParamSeries>>>();
    auto& layouts = *layouts_;
    // A linked cell's snapshots are its original's, as the link's cell and run (row_sources, schema v12).
    CachedStatement s = connection.cached(
        "SELECT x.cell_id, coalesce(x.link_run_id, s.run_id), s.step, s.layout_id, s.data FROM " +
        row_sources_from(schema_version_) +
        " x JOIN param_snapshots s ON s.cell_id = x.rows_cell_id WHERE x.cell_id = ?1 ORDER BY s.step");
    s->bind(1, cell_id);
    // The params table's eight columns, in export_tables' order: cell_id, run_id, step, module, layer, idx, name, value.
    Row row(8);
    int64_t rows = 0;
    while (s->step()) {
      const int64_t layout_id = s->int64(3);
      auto it = layouts.find(layout_id);
      if (it == layouts.end()) {
        CachedStatement layout_of = connection.cached("SELECT layout FROM param_layouts WHERE id = ?1");
        layout_of->bind(1, layout_id);
        EGM_REQUIRE(layout_of->step(), DbError, "{}: param_snapshots refers to layout {}, which param_layouts lacks",
                    connection.path(), layout_id);
        try {
          it = layouts.emplace(layout_id, parse_param_layout(layout_of->text(0))).first;
        } catch (const DbError& e) {
          // A bad layout names its row and stops the export: a partial params table would pass for a whole one.
          EGM_THROW(DbError, "{}: table param_layouts, row id = {}: {}; nothing exported", connection.path(),
                    layout_id, e.what());
        }
      }
      row[0] = s->int64(0);
      row[1] = s->int64(1);
      row[2] = s->int64(2);
      std::vector<ParamEntry> entries;
      try {
        entries = unpack_params(it->second, s->blob(4));
      } catch (const DbError& e) {
        EGM_THROW(DbError, "{}: table param_snapshots, cell {} step {}: {}; nothing exported", connection.path(),
                  s->int64(0), s->int64(2), e.what());
      }
      for (const ParamEntry& e : entries) {
        row[3] = e.module;
        row[4] = e.layer;
        row[5] = e.idx;
        row[6] = e.name;
        row[7] = e.value ? Value(*e.value) : Value();
        sink(row);
        ++rows;
      }
    }
    return rows;
  }

 private:
  int schema_version_;
  // Shared by the copies std::function makes.
  std::shared_ptr<std::map<int64_t, std::vector<ParamSeries>>> layouts_;
};

}  // namespace

std::vector<ExportTable> export_tables(int schema_version) {
  // Each column of a stored table (alias s: sweeps, c: cells, r: runs, m: metrics, p: params, l: looks),
  // its type and the version that added it as db/tables.h has them.
  const auto s = stored_from("sweeps", "s"), c = stored_from("cells", "c"), r = stored_from("runs", "r"),
             m = stored_from("metrics", "m"), p = stored_from("params", "p"), l = stored_from("looks", "l");
  std::vector<ExportTable> tables;
  // The per-sweep tables (per_cell false) bind ?1 to the sweep id; the per-cell ones to each cell's id in turn.
  tables.push_back({"sweep",
                    {s("id", "sweep_id"), s("name"), s("status"), s("created_at"), s("updated_at"), s("heartbeat_at"),
                     s("slurm_job_id"), s("spec_hash"), s("spec_json")},
                    "FROM sweeps s WHERE s.id = ?1",
                    false,
                    "",
                    {}});
  ExportTable cells{
      "cells",
      {c("id", "cell_id"), c("position"), c("key"), c("variant"), c("seed"), c("grid_point"), c("grid_json"),
       c("status"), c("attempts"), c("failures"), c("max_attempts"), c("max_steps"), c("final_step")},
      "FROM cells c WHERE c.sweep_id = ?1 ORDER BY c.position",
      false,
      "",
      {}};
  // The measurement columns sit between the status columns and the bulky ones, in cell_measurements' order.
  for (const MeasurementField& f : cell_measurements()) cells.columns.push_back(c(f.name));
  for (SourceColumn column : {c("last_error"), c("updated_at"), c("config_hash"), c("config_json")})
    cells.columns.push_back(std::move(column));
  tables.push_back(std::move(cells));
  tables.push_back(
      {"runs",
       {r("id", "run_id"), r("cell_id"), r("attempt"), r("status"), r("host"), r("device"), r("gpu_name"),
        r("world_size"), r("threads"), r("backend"), r("torch_version"), r("git_commit"), r("started_at"),
        r("ended_at"), col("duration_s", T::float64, "r.ended_at - r.started_at"), r("resumed_from_step"), r("error"),
        // Schema v11 (db/reuse.h): the run's numerics version, and for a cell
        // that reused a finished run instead of training, which one.
        r("numerics_version"), r("reused_run"), r("reused_from")},
       "FROM runs r WHERE r.cell_id = ?1 ORDER BY r.attempt",
       true,
       "",
       {}});
  // A linked cell's rows are its original's, read through row_sources (x, schema v12) as the link's cell and run.
  SourceColumn metric_cell = m("cell_id"), metric_run = m("run_id");
  metric_cell.expr = "x.cell_id";
  metric_run.expr = "coalesce(x.link_run_id, m.run_id)";
  tables.push_back({"metrics",
                    {metric_cell, metric_run, m("split"), m("step"), m("loss"), m("lr"), m("tokens_per_s"), m("time")},
                    "FROM " + row_sources_from(schema_version) +
                        " x JOIN metrics m ON m.cell_id = x.rows_cell_id WHERE x.cell_id = ?1 "
                        "ORDER BY m.split, m.step",  // the primary key's order
                    true,
                    "",
                    {}});
  ExportTable params{"params",
                     {p("cell_id"), p("run_id"), p("step"), p("module"), p("layer"), p("idx"), p("name"), p("value")},
                     "FROM params p WHERE p.cell_id = ?1 ORDER BY p.step, p.module, p.layer, p.name, p.idx",
                     true,
                     "",
                     {}};
  // Before schema v5 `params` was a table of these rows (keyed in this order); since, its rows are packed.
  if (schema_version >= 5) params.read = PackedParamsReader{schema_version};
  tables.push_back(std::move(params));
  // A sequential sweep's looks (egm sweep --until, schema v10): one row per look and claim.
  tables.push_back({"looks",
                    {l("look"), l("time"), l("claim"), l("seeds"), l("estimate"), l("lower"), l("upper"),
                     l("p_anytime"), l("decision"), l("settled"), l("next"), l("method"), l("params")},
                    "FROM looks l WHERE l.sweep_id = ?1 ORDER BY l.look, l.id",
                    false,
                    "looks",
                    {}});
  return tables;
}

// Views count too: the params of a schema v5 file are a view over the packed snapshots.
bool has_table(ResultsDb& db, const std::string& name) {
  Statement s = db.connection().prepare("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1");
  s.bind(1, name);
  return s.step();
}

int64_t read_export_rows(ResultsDb& db, const ExportTable& table, int64_t sweep_id, const RowSink& sink) {
  Connection& connection = db.connection();
  const int schema_version = db.schema_version();
  int64_t rows = 0;
  std::string sql = "SELECT ";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const SourceColumn& c = table.columns[i];
    // A column newer than the file's schema exports as NULL, so every file gives the same columns.
    sql += fmt::format("{}{} AS \"{}\"", i ? ", " : "", schema_version >= c.since ? c.expr : "NULL", c.column.name);
  }
  sql += " " + table.from;
  // One row reused for every sink call: the sink copies what it keeps.
  Row row(table.columns.size());
  auto read_one = [&](int64_t id) {
    if (table.read) {
      rows += table.read(connection, id, sink);
      return;
    }
    // Cached: the same SELECT runs once per cell, with only ?1 changing.
    CachedStatement s = connection.cached(sql);
    s->bind(1, id);
    int64_t row_of_id = 0;  // the row within this cell or sweep, for the error message
    while (s->step()) {
      ++row_of_id;
      for (size_t i = 0; i < row.size(); ++i) {
        const Value v = s->value(static_cast<int>(i));
        std::optional<Value> t = typed(v, table.columns[i].column.type);
        EGM_REQUIRE(t, DbError,
                    "{}: table {}, column {}, row {} of {} {}: holds {}, not a{} (was the database edited "
                    "elsewhere?); nothing exported",
                    connection.path(), table.name, table.columns[i].column.name, row_of_id,
                    table.per_cell ? "cell" : "sweep", id, show_value(v),
                    table.columns[i].column.type == T::int64       ? "n integer"
                    : table.columns[i].column.type == T::timestamp ? " time in UNIX seconds"
                                                                   : " number");
        row[i] = std::move(*t);
      }
      sink(row);
      ++rows;
    }
  };
  if (!table.per_cell) {
    read_one(sweep_id);
    return rows;
  }
  // Cell by cell, in the sweep's order, so the output is grouped by cell.
  Statement cells = connection.prepare("SELECT id FROM cells WHERE sweep_id = ?1 ORDER BY position");
  cells.bind(1, sweep_id);
  while (cells.step()) read_one(cells.int64(0));
  return rows;
}

}  // namespace egm::db
