// What an export writes, one table at a time: its typed columns and a sink
// that takes its rows one by one (streamed: a sink holds at most a bounded
// batch, never the table). The Parquet sink lives in a module loaded at run
// time (parquet_plugin.h), so this header is all it shares with egm: plain
// C++17 and standard types, no egm library calls.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "db/table_format.h"

namespace egm::exporter {

// A column's type in every format (db/table_format.h). timestamp: UNIX seconds
// (REAL) in the database; Parquet TIMESTAMP(us, UTC), CSV ISO 8601
// ("2026-05-30T12:00:05.250000Z").
using ColumnType = db::ColumnType;
using Column = db::Column;

struct TableSchema {
  std::string name;  // "cells"; the file is NAME.parquet / NAME.csv
  std::vector<Column> columns;
  // Key-value pairs stored with the file where the format has a place for
  // them (Parquet's footer): the sweep, the database, egm's version.
  std::vector<std::pair<std::string, std::string>> metadata;
};

// One row: a value per column, NULL as std::monostate. int64 columns hold
// int64_t, float64 and timestamp columns double, text columns std::string.
using Row = std::vector<db::Value>;

class TableSink {
 public:
  virtual ~TableSink() = default;
  virtual void add(const Row& row) = 0;
  // Writes what is buffered and closes the file; a sink not finished leaves
  // an incomplete file (the exporter removes the whole folder then).
  virtual void finish() = 0;
};

}  // namespace egm::exporter
