// The tables `egm export` writes, as data: each is a name, typed columns with
// the SQL expression each is read from, and where its rows come from; and the
// reading of their rows (the export's SQL lives here, not in src/export).
// Adding a table is adding one entry to export_tables() (export_tables.cpp); a table
// that only some databases have (the looks of a sequential sweep) names it in
// `requires_table` and is skipped where it is absent.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "db/results_db.h"
#include "db/table_format.h"

namespace egm::db {

// One output row: a value per column, NULL as std::monostate; int64 columns
// hold int64_t, float64 and timestamp columns double, text columns std::string.
using Row = std::vector<Value>;
using RowSink = std::function<void(const Row&)>;

struct SourceColumn {
  Column column;
  std::string expr;  // SQL over the table's FROM clause
  int since = 1;     // the schema version that added it; NULL from older files
};

struct ExportTable {
  std::string name;
  std::vector<SourceColumn> columns;
  // "FROM ... WHERE ... ORDER BY ...": one row per output row. ?1 is the
  // sweep's id, or with per_cell the id of each cell of the sweep in turn (in
  // spec order): the big tables are read cell by cell through their primary
  // key, already in order, instead of sorting millions of rows at once.
  std::string from;
  bool per_cell = false;
  std::string requires_table;  // exported only when the database has this table ("" = always)
  // Rows that are not one per SQL row (the learned parameters, unpacked from
  // their snapshots): replaces `from`, called with each cell's id when
  // per_cell, else the sweep's. Returns the rows written.
  std::function<int64_t(Connection&, int64_t id, const RowSink&)> read;
};

// The tables, in export order, for a database at `schema_version`.
std::vector<ExportTable> export_tables(int schema_version);

// Streams the sweep's rows of `table` into `sink`; returns the row count.
int64_t read_export_rows(ResultsDb& db, const ExportTable& table, int64_t sweep_id, const RowSink& sink);

// True when the database has a table or view of this name.
bool has_table(ResultsDb& db, const std::string& name);

}  // namespace egm::db
