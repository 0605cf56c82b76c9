// CSV files through db::format_table's CSV writer (RFC 4180 quoting, reals
// that read back to the same double), a chunk of rows at a time.
#pragma once

#include <memory>
#include <string>

#include "export/table_sink.h"

namespace egm::exporter {

// Timestamps become ISO 8601 UTC text with microseconds
// ("2026-05-30T12:00:05.250000Z"); NULL an empty field.
std::unique_ptr<TableSink> open_csv_sink(const std::string& path, const TableSchema& schema);

// UNIX seconds as ISO 8601 UTC with microseconds.
std::string iso8601_utc(double unix_seconds);

}  // namespace egm::exporter
