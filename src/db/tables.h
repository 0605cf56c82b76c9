// Every table and view of the results database (schemas/results.sql) as data:
// its name, the schema version that added it, its typed columns (each with the
// version that added it), and what egm merge does with its rows. egm export's
// tables (export_tables.h) take their columns' types from here and egm merge
// copies the tables listed here; tests/db/test_tables.cpp checks the list
// against the schema the migrations build, version by version, so a table,
// view or column added to results.sql and not here fails a test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "db/table_format.h"

namespace egm::db {

enum class SqlType { integer, real, text, blob };

struct StoredColumn {
  std::string name;
  SqlType type = SqlType::text;
  bool time = false;  // a REAL of UNIX seconds
  int since = 1;      // the schema version that added it
  // Its type in an export: int64, float64, timestamp (time) or text; a BLOB has none (an Error).
  ColumnType export_type() const;
};

// What egm merge does with a table's rows (db/merge.h).
enum class MergeRole {
  merged_sweep,  // sweeps: one row per merged sweep, written by merge from the inputs' rows
  chosen_cell,   // cells: each cell from the input it is taken from
  cell_rows,     // rows of the chosen cells (and their sweeps), ids shifted past the rows there
  shared,        // rows named by content (a layout, a diff), copied once
  source,        // merge_sources: each input, and the inputs of an input that was a merge
  derived,       // a view: nothing to copy
};

struct StoredTable {
  std::string name;
  bool view = false;
  int since = 1;  // the schema version that added it (params: a table before v5, a view since)
  std::vector<StoredColumn> columns;
  MergeRole merge = MergeRole::derived;
  // Its columns at `schema_version` (those added by then).
  std::vector<StoredColumn> columns_at(int schema_version) const;
};

// Every table and view, in the order egm merge writes them.
const std::vector<StoredTable>& stored_tables();
// The table or view of that name (an Error for a name not listed).
const StoredTable& stored_table(std::string_view name);
// Its column of that name (an Error for a name not listed).
const StoredColumn& stored_column(std::string_view table, std::string_view column);

// The FROM item (columns cell_id, rows_cell_id, link_run_id) that gives each
// cell the cell whose metric rows and parameter snapshots it reads: the view
// row_sources from schema v12 on (a cell linked to a run of the same file
// reads the original's rows, as its link run's), before it every cell itself.
// Every reader of metrics or param_snapshots by cell goes through it.
std::string row_sources_from(int schema_version);

}  // namespace egm::db
