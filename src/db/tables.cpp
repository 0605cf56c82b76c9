// The results database's tables and views as data (tables.h).
#include "db/tables.h"

#include <algorithm>

#include "run/outcome.h"
#include "util/error.h"

namespace egm::db {
namespace {

// A column added with its table (since 0) or at schema version `since`.
StoredColumn integer_col(const char* name, int since = 0) { return {name, SqlType::integer, false, since}; }
StoredColumn real_col(const char* name, int since = 0) { return {name, SqlType::real, false, since}; }
StoredColumn time_col(const char* name, int since = 0) { return {name, SqlType::real, true, since}; }
StoredColumn text_col(const char* name, int since = 0) { return {name, SqlType::text, false, since}; }
StoredColumn blob_col(const char* name, int since = 0) { return {name, SqlType::blob, false, since}; }

// `columns`, the cells' measurement columns (run/outcome.h), then `after`.
std::vector<StoredColumn> with_measurements(std::vector<StoredColumn> columns, std::vector<StoredColumn> after = {}) {
  for (const MeasurementField& f : cell_measurements())
    columns.push_back({f.name, SqlType::real, false, f.cells_since});
  columns.insert(columns.end(), after.begin(), after.end());
  return columns;
}

// A column with since 0 came with its table, so it takes the table's version.
StoredTable table(const char* name, bool view, int since, MergeRole merge, std::vector<StoredColumn> columns) {
  // No column predates its table: a measurement column of cells (since 1)
  // appears in a view with the view (cell_results, since 7).
  for (StoredColumn& c : columns) c.since = std::max(c.since, since);
  return {name, view, since, std::move(columns), merge};
}

}  // namespace

ColumnType StoredColumn::export_type() const {
  switch (type) {
    case SqlType::integer:
      return ColumnType::int64;
    case SqlType::real:
      return time ? ColumnType::timestamp : ColumnType::float64;
    case SqlType::text:
      return ColumnType::text;
    // Only param_snapshots.data is a BLOB, and the export unpacks it into rows rather than exporting it.
    case SqlType::blob:
      break;
  }
  EGM_THROW(Error, "column {} is a BLOB: no export type", name);
}

std::vector<StoredColumn> StoredTable::columns_at(int schema_version) const {
  std::vector<StoredColumn> out;
  for (const StoredColumn& c : columns)
    if (c.since <= schema_version) out.push_back(c);
  return out;
}

const std::vector<StoredTable>& stored_tables() {
  // Must match what the migrations in results.sql build at each version; schema_check compares a file against those.
  static const std::vector<StoredTable> tables{
      // Sweeps: merge writes one row per merged sweep from its inputs' rows.
      table("sweeps", false, 1, MergeRole::merged_sweep,
            {integer_col("id"), text_col("name"), text_col("spec_json"), text_col("spec_hash"), time_col("created_at"),
             time_col("updated_at"), text_col("status"), text_col("slurm_job_id"), time_col("heartbeat_at", 2),
             text_col("owner_host", 9), integer_col("owner_pid", 9), time_col("owner_started_at", 9),
             text_col("owner_slurm_job", 9), time_col("owner_heartbeat", 9), text_col("corpus_sha256", 9),
             integer_col("corpus_bytes", 9), text_col("corpus_path", 9)}),
      // Each input egm merge read (v8).
      table("merge_sources", false, 8, MergeRole::source,
            {integer_col("id"), text_col("path"), integer_col("size"), integer_col("schema_version"), text_col("host"),
             text_col("egm_commit"), time_col("merged_at"), integer_col("via")}),
      table("cells", false, 1, MergeRole::chosen_cell,
            with_measurements({integer_col("id"), integer_col("sweep_id"), integer_col("position"), text_col("key"),
                               text_col("variant"), integer_col("seed"), text_col("config_json"),
                               text_col("config_hash"), integer_col("max_steps"), text_col("status"),
                               integer_col("attempts"), integer_col("failures"), integer_col("max_attempts"),
                               text_col("last_error"), integer_col("final_step"), time_col("updated_at"),
                               integer_col("grid_point", 3), text_col("grid_json", 3)})),
      // The attempts of the chosen cells and what came with them.
      table("runs", false, 1, MergeRole::cell_rows,
            {integer_col("id"), integer_col("cell_id"), integer_col("attempt"), text_col("status"), text_col("host"),
             text_col("device"), integer_col("world_size"), text_col("backend"), text_col("torch_version"),
             text_col("git_commit"), time_col("started_at"), time_col("ended_at"), integer_col("resumed_from_step"),
             text_col("error"), text_col("source_diff_sha256", 6), integer_col("threads", 7), text_col("gpu_name", 7),
             integer_col("merge_source", 8),
             // v11 (db/reuse.h): the numerics version a run was trained at, and for a cell that
             // reused a finished run instead of training, that run and where it came from.
             integer_col("numerics_version", 11), integer_col("reused_run", 11), text_col("reused_from", 11)}),
      table("source_diffs", false, 6, MergeRole::shared, {text_col("sha256"), integer_col("size"), text_col("diff")}),
      table("metrics", false, 1, MergeRole::cell_rows,
            {integer_col("cell_id"), integer_col("run_id"), integer_col("step"), text_col("split"), real_col("loss"),
             real_col("lr"), real_col("tokens_per_s"), time_col("time")}),
      table("param_layouts", false, 5, MergeRole::shared, {integer_col("id"), text_col("layout")}),
      table("param_snapshots", false, 5, MergeRole::cell_rows,
            {integer_col("id"), integer_col("cell_id"), integer_col("run_id"), integer_col("step"),
             integer_col("layout_id"), blob_col("data")}),
      table("events", false, 1, MergeRole::cell_rows,
            {integer_col("id"), time_col("time"), integer_col("sweep_id"), integer_col("cell_id"),
             integer_col("run_id"), text_col("kind"), text_col("message"), integer_col("step", 4)}),
      table("looks", false, 10, MergeRole::cell_rows,
            {integer_col("id"), integer_col("sweep_id"), integer_col("look"), time_col("time"), text_col("claim"),
             integer_col("seeds"), real_col("estimate"), real_col("lower"), real_col("upper"), real_col("p_anytime"),
             text_col("decision"), integer_col("settled"), text_col("next"), text_col("method"), text_col("params")}),
      // Views. params: one row per learned value (a table before v5, unpacked from param_snapshots since).
      table("params", true, 1, MergeRole::derived,
            {integer_col("cell_id"), integer_col("run_id"), integer_col("step"), text_col("module"),
             integer_col("layer"), integer_col("idx"), text_col("name"), real_col("value")}),
      table("cell_results", true, 7, MergeRole::derived,
            with_measurements(
                {text_col("sweep"), integer_col("cell_id"), text_col("key"), text_col("variant"), integer_col("seed"),
             integer_col("grid_point"), text_col("grid_json"), text_col("status"), integer_col("attempts"),
             integer_col("failures"), integer_col("final_step")},
            {time_col("updated_at")})),
      // v12 (db/reuse.h): the cell whose metric rows and parameter snapshots each cell reads.
      table("row_sources", true, 12, MergeRole::derived,
            {integer_col("cell_id"), integer_col("rows_cell_id"), integer_col("link_run_id")}),
      table("metric_points", true, 7, MergeRole::derived,
            {text_col("sweep"), integer_col("cell_id"), text_col("key"), text_col("variant"), integer_col("seed"),
             integer_col("grid_point"), integer_col("run_id"), text_col("split"), integer_col("step"), real_col("loss"),
             real_col("lr"), real_col("tokens_per_s"), time_col("time")}),
      table("run_compute", true, 7, MergeRole::derived,
            {text_col("sweep"), integer_col("run_id"), integer_col("cell_id"), text_col("key"), text_col("variant"),
             integer_col("seed"), integer_col("grid_point"), integer_col("attempt"), text_col("status"),
             text_col("host"), text_col("device"), text_col("gpu_name"), integer_col("world_size"),
             integer_col("threads"), time_col("started_at"), time_col("ended_at"), real_col("seconds"),
             real_col("gpu_seconds"), real_col("core_seconds")}),
  };
  return tables;
}

// A linear search over a dozen tables; an unknown name is a bug in the caller (Error, not DbError).
const StoredTable& stored_table(std::string_view name) {
  for (const StoredTable& t : stored_tables())
    if (t.name == name) return t;
  EGM_THROW(Error, "no table or view '{}' in db/tables.cpp", name);
}

const StoredColumn& stored_column(std::string_view table, std::string_view column) {
  for (const StoredColumn& c : stored_table(table).columns)
    if (c.name == column) return c;
  EGM_THROW(Error, "no column '{}' of {} in db/tables.cpp", column, table);
}

std::string row_sources_from(int schema_version) {
  // Before v12 a link held a copy of its original's rows (or there were no links): each cell reads its own.
  return schema_version >= 12 ? "row_sources"
                              : "(SELECT id AS cell_id, id AS rows_cell_id, NULL AS link_run_id FROM cells)";
}

}  // namespace egm::db
