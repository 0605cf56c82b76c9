// Tabular output shared by the read-only verbs (status, runs, query) and the
// analysis layer: a Table of typed values rendered as an aligned text table,
// CSV (RFC 4180 quoting) or a JSON array of objects.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace egm::db {

// One cell of a result: NULL, integer, real or text (SQLite's storage classes).
using Value = std::variant<std::monostate, int64_t, double, std::string>;

// A column's type in every export format (export/table_sink.h). timestamp:
// UNIX seconds (REAL) in the database; Parquet TIMESTAMP(us, UTC), CSV ISO 8601.
enum class ColumnType { int64, float64, text, timestamp };

struct Column {
  std::string name;
  ColumnType type = ColumnType::text;
};

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;  // each row has columns.size() values
};

enum class Format { table, csv, json };

// "table" | "csv" | "json"; throws ConfigError naming the valid formats.
Format parse_format(const std::string& name);

struct FormatOptions {
  int float_digits = 6;           // significant digits for reals in `table` (csv/json: round-trip);
                                  // reals >= 10^float_digits are printed in full with 2 decimals
  std::string null_text = "";     // how `table` shows NULL (csv: empty field; json: null)
  bool header = true;             // csv: the header line (false: rows only, to stream a table in chunks)
};

// Every format ends with a newline; an empty table still prints its header
// (table, csv) or "[]" (json).
std::string format_table(const Table& table, Format format, const FormatOptions& options = {});

// "2h 05m", "3m 10s", "42s": a duration for people.
std::string format_duration(double seconds);
// "2026-05-30 12:00:05" (UTC) from UNIX seconds.
std::string format_utc(double unix_seconds);

// The text of one value as `table` shows it.
std::string value_text(const Value& value, const FormatOptions& options = {});
// Quotes a CSV field when it contains a comma, quote, CR or LF.
std::string csv_field(const std::string& text);

}  // namespace egm::db
