// The tables an export writes, as data: each is a name, typed columns with
// the SQL expression each is read from, and where its rows come from. Adding
// a table is adding one entry to export_tables() (export_tables.cpp); a table
// that only some databases have (the looks of a sequential sweep) names it in
// `requires_table` and is skipped where it is absent.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "db/sqlite.h"
#include "export/table_sink.h"

namespace egm::exporter {

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
  std::function<int64_t(db::Connection&, int64_t id, TableSink&)> read;
};

// The tables, in export order, for a database at `schema_version`.
std::vector<ExportTable> export_tables(int schema_version);

// The table's columns (what a sink is opened with).
TableSchema schema_of(const ExportTable& table);

// Streams the sweep's rows of `table` into `sink` (not finished); returns the
// row count. `progress` is called every 100,000 rows with the count so far.
int64_t read_rows(db::Connection& connection, int schema_version, const ExportTable& table, int64_t sweep_id,
                  TableSink& sink, const std::function<void(int64_t)>& progress = {});

// True when the database has a table or view of this name.
bool has_table(db::Connection& connection, const std::string& name);

}  // namespace egm::exporter
