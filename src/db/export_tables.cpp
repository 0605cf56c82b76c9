#include "export/export_tables.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <memory>
#include <utility>

#include "db/param_pack.h"
#include "util/error.h"

namespace egm::exporter {
namespace {

using T = ColumnType;

SourceColumn col(std::string name, T type, std::string expr, int since = 1) {
  return SourceColumn{Column{std::move(name), type}, std::move(expr), since};
}

// The value as the column's type says. SQLite's affinity stores numbers in
// REAL and INTEGER columns as such; an integer in a REAL column (a file edited
// by hand) converts exactly. What cannot convert exactly (text in a number
// column, a real that is no 64-bit integer in an INTEGER one: a file edited
// elsewhere) is refused by the caller, which names the table, column and row;
// nullopt here.
std::optional<db::Value> typed(const db::Value& v, ColumnType type) {
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
    case T::text:
      if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
      if (const double* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
      return v;
  }
  return v;
}

std::string show_value(const db::Value& v) {
  if (const std::string* s = std::get_if<std::string>(&v)) {
    // Cut short; egm's error line escapes its control bytes.
    return "text '" + (s->size() > 40 ? s->substr(0, 37) + "..." : *s) + "'";
  }
  if (const double* d = std::get_if<double>(&v)) return fmt::format("the real {}", *d);
  return "a value";
}

// Counts the rows on their way to the sink and reports every 100,000.
class CountingSink final : public TableSink {
 public:
  CountingSink(TableSink& sink, const std::function<void(int64_t)>& progress) : sink_(sink), progress_(progress) {}
  void add(const Row& row) override {
    sink_.add(row);
    if (++rows_ % 100000 == 0 && progress_) progress_(rows_);
  }
  void finish() override { sink_.finish(); }
  int64_t rows() const { return rows_; }

 private:
  TableSink& sink_;
  const std::function<void(int64_t)>& progress_;
  int64_t rows_ = 0;
};

// The learned parameters of schema v5 on, one cell at a time: one row per
// value, unpacked from the (cell, step) snapshots (UNIQUE(cell_id, step) reads
// them in step order); each layout parsed once per export.
class PackedParamsReader {
 public:
  int64_t operator()(db::Connection& connection, int64_t cell_id, TableSink& sink) {
    if (layouts_ == nullptr) layouts_ = std::make_shared<std::map<int64_t, std::vector<db::ParamSeries>>>();
    auto& layouts = *layouts_;
    db::CachedStatement s = connection.cached(
        "SELECT cell_id, run_id, step, layout_id, data FROM param_snapshots WHERE cell_id = ?1 ORDER BY step");
    s->bind(1, cell_id);
    Row row(8);
    int64_t rows = 0;
    while (s->step()) {
      const int64_t layout_id = s->int64(3);
      auto it = layouts.find(layout_id);
      if (it == layouts.end()) {
        db::CachedStatement layout_of = connection.cached("SELECT layout FROM param_layouts WHERE id = ?1");
        layout_of->bind(1, layout_id);
        EGM_REQUIRE(layout_of->step(), DbError, "{}: param_snapshots refers to layout {}, which param_layouts lacks",
                    connection.path(), layout_id);
        try {
          it = layouts.emplace(layout_id, db::parse_param_layout(layout_of->text(0))).first;
        } catch (const DbError& e) {
          EGM_THROW(DbError, "{}: table param_layouts, row id = {}: {}; nothing exported", connection.path(),
                    layout_id, e.what());
        }
      }
      row[0] = s->int64(0);
      row[1] = s->int64(1);
      row[2] = s->int64(2);
      std::vector<db::ParamEntry> entries;
      try {
        entries = db::unpack_params(it->second, s->blob(4));
      } catch (const DbError& e) {
        EGM_THROW(DbError, "{}: table param_snapshots, cell {} step {}: {}; nothing exported", connection.path(),
                  s->int64(0), s->int64(2), e.what());
      }
      for (const db::ParamEntry& e : entries) {
        row[3] = e.module;
        row[4] = e.layer;
        row[5] = e.idx;
        row[6] = e.name;
        row[7] = e.value ? db::Value(*e.value) : db::Value();
        sink.add(row);
        ++rows;
      }
    }
    return rows;
  }

 private:
  // Shared by the copies std::function makes.
  std::shared_ptr<std::map<int64_t, std::vector<db::ParamSeries>>> layouts_;
};

}  // namespace

std::vector<ExportTable> export_tables(int schema_version) {
  std::vector<ExportTable> tables;
  tables.push_back({"sweep",
                    {col("sweep_id", T::int64, "s.id"), col("name", T::text, "s.name"),
                     col("status", T::text, "s.status"), col("created_at", T::timestamp, "s.created_at"),
                     col("updated_at", T::timestamp, "s.updated_at"),
                     col("heartbeat_at", T::timestamp, "s.heartbeat_at", 2),
                     col("slurm_job_id", T::text, "s.slurm_job_id"), col("spec_hash", T::text, "s.spec_hash"),
                     col("spec_json", T::text, "s.spec_json")},
                    "FROM sweeps s WHERE s.id = ?1",
                    false,
                    "",
                    {}});
  tables.push_back(
      {"cells",
       {col("cell_id", T::int64, "c.id"), col("position", T::int64, "c.position"), col("key", T::text, "c.key"),
        col("variant", T::text, "c.variant"), col("seed", T::int64, "c.seed"),
        col("grid_point", T::int64, "c.grid_point", 3), col("grid_json", T::text, "c.grid_json", 3),
        col("status", T::text, "c.status"), col("attempts", T::int64, "c.attempts"),
        col("failures", T::int64, "c.failures"), col("max_attempts", T::int64, "c.max_attempts"),
        col("max_steps", T::int64, "c.max_steps"), col("final_step", T::int64, "c.final_step"),
        col("final_val", T::float64, "c.final_val"), col("best_val", T::float64, "c.best_val"),
        col("full_val", T::float64, "c.full_val"), col("ar_val", T::float64, "c.ar_val"),
        col("ar_ref_val", T::float64, "c.ar_ref_val"), col("last_error", T::text, "c.last_error"),
        col("updated_at", T::timestamp, "c.updated_at"), col("config_hash", T::text, "c.config_hash"),
        col("config_json", T::text, "c.config_json")},
       "FROM cells c WHERE c.sweep_id = ?1 ORDER BY c.position",
       false,
       "",
       {}});
  tables.push_back(
      {"runs",
       {col("run_id", T::int64, "r.id"), col("cell_id", T::int64, "r.cell_id"), col("attempt", T::int64, "r.attempt"),
        col("status", T::text, "r.status"), col("host", T::text, "r.host"), col("device", T::text, "r.device"),
        col("gpu_name", T::text, "r.gpu_name", 7), col("world_size", T::int64, "r.world_size"),
        col("threads", T::int64, "r.threads", 7), col("backend", T::text, "r.backend"),
        col("torch_version", T::text, "r.torch_version"), col("git_commit", T::text, "r.git_commit"),
        col("started_at", T::timestamp, "r.started_at"), col("ended_at", T::timestamp, "r.ended_at"),
        col("duration_s", T::float64, "r.ended_at - r.started_at"),
        col("resumed_from_step", T::int64, "r.resumed_from_step"), col("error", T::text, "r.error")},
       "FROM runs r WHERE r.cell_id = ?1 ORDER BY r.attempt",
       true,
       "",
       {}});
  tables.push_back({"metrics",
                    {col("cell_id", T::int64, "m.cell_id"), col("run_id", T::int64, "m.run_id"),
                     col("split", T::text, "m.split"), col("step", T::int64, "m.step"),
                     col("loss", T::float64, "m.loss"), col("lr", T::float64, "m.lr"),
                     col("tokens_per_s", T::float64, "m.tokens_per_s"), col("time", T::timestamp, "m.time")},
                    "FROM metrics m WHERE m.cell_id = ?1 ORDER BY m.split, m.step",  // the primary key's order
                    true,
                    "",
                    {}});
  ExportTable params{"params",
                     {col("cell_id", T::int64, "p.cell_id"), col("run_id", T::int64, "p.run_id"),
                      col("step", T::int64, "p.step"), col("module", T::text, "p.module"),
                      col("layer", T::int64, "p.layer"), col("idx", T::int64, "p.idx"),
                      col("name", T::text, "p.name"), col("value", T::float64, "p.value")},
                     "FROM params p WHERE p.cell_id = ?1 ORDER BY p.step, p.module, p.layer, p.name, p.idx",
                     true,
                     "",
                     {}};
  // Before schema v5 `params` was a table of these rows (keyed in this order); since, its rows are packed.
  if (schema_version >= 5) params.read = PackedParamsReader{};
  tables.push_back(std::move(params));
  // A sequential sweep's looks (egm sweep --until, schema v10): one row per look and claim.
  tables.push_back({"looks",
                    {col("look", T::int64, "l.look"), col("time", T::timestamp, "l.time"),
                     col("claim", T::text, "l.claim"), col("seeds", T::int64, "l.seeds"),
                     col("estimate", T::float64, "l.estimate"), col("lower", T::float64, "l.lower"),
                     col("upper", T::float64, "l.upper"), col("p_anytime", T::float64, "l.p_anytime"),
                     col("decision", T::text, "l.decision"), col("settled", T::int64, "l.settled"),
                     col("next", T::text, "l.next"), col("method", T::text, "l.method"),
                     col("params", T::text, "l.params")},
                    "FROM looks l WHERE l.sweep_id = ?1 ORDER BY l.look, l.id",
                    false,
                    "looks",
                    {}});
  return tables;
}

TableSchema schema_of(const ExportTable& table) {
  TableSchema schema;
  schema.name = table.name;
  for (const SourceColumn& c : table.columns) schema.columns.push_back(c.column);
  return schema;
}

bool has_table(db::Connection& connection, const std::string& name) {
  db::Statement s = connection.prepare("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1");
  s.bind(1, name);
  return s.step();
}

int64_t read_rows(db::Connection& connection, int schema_version, const ExportTable& table, int64_t sweep_id,
                  TableSink& sink, const std::function<void(int64_t)>& progress) {
  CountingSink counted(sink, progress);
  std::string sql = "SELECT ";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const SourceColumn& c = table.columns[i];
    sql += fmt::format("{}{} AS \"{}\"", i ? ", " : "", schema_version >= c.since ? c.expr : "NULL", c.column.name);
  }
  sql += " " + table.from;
  Row row(table.columns.size());
  auto read_one = [&](int64_t id) {
    if (table.read) {
      table.read(connection, id, counted);
      return;
    }
    db::CachedStatement s = connection.cached(sql);
    s->bind(1, id);
    while (s->step()) {
      for (size_t i = 0; i < row.size(); ++i) {
        const db::Value v = s->value(static_cast<int>(i));
        std::optional<db::Value> t = typed(v, table.columns[i].column.type);
        EGM_REQUIRE(t, DbError,
                    "{}: table {}, column {}, row {} of {} {}: holds {}, not a{} (was the database edited "
                    "elsewhere?); nothing exported",
                    connection.path(), table.name, table.columns[i].column.name, counted.rows() + 1,
                    table.per_cell ? "cell" : "sweep", id, show_value(v),
                    table.columns[i].column.type == T::int64       ? "n integer"
                    : table.columns[i].column.type == T::timestamp ? " time in UNIX seconds"
                                                                   : " number");
        row[i] = std::move(*t);
      }
      counted.add(row);
    }
  };
  if (!table.per_cell) {
    read_one(sweep_id);
    return counted.rows();
  }
  db::Statement cells = connection.prepare("SELECT id FROM cells WHERE sweep_id = ?1 ORDER BY position");
  cells.bind(1, sweep_id);
  while (cells.step()) read_one(cells.int64(0));
  return counted.rows();
}

}  // namespace egm::exporter
