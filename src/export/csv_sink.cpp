// The CSV sink: db::format_table's CSV writer over each chunk of rows, the header
// once, timestamps as ISO 8601 UTC text with microseconds.
#include "export/csv_sink.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <fstream>

#include "util/error.h"

namespace egm::exporter {
namespace {

// Rows per chunk handed to the CSV writer (a few MB of text at most).
constexpr size_t kCsvChunkRows = 4096;

class CsvSink final : public TableSink {
 public:
  CsvSink(const std::string& path, const TableSchema& schema) : path_(path), out_(path, std::ios::binary) {
    EGM_REQUIRE(out_.good(), IoError, "cannot create {}", path);
    for (const Column& c : schema.columns) {
      chunk_.columns.push_back(c.name);
      // Timestamps are REAL UNIX seconds in the database; a CSV reader wants text, so add() converts them.
      timestamp_.push_back(c.type == ColumnType::timestamp);
    }
  }

  void add(const Row& row) override {
    chunk_.rows.push_back(row);
    Row& copy = chunk_.rows.back();
    // Only the copy kept for the chunk changes; a NULL timestamp (std::monostate) stays an empty field.
    for (size_t i = 0; i < copy.size() && i < timestamp_.size(); ++i)
      if (timestamp_[i] && std::holds_alternative<double>(copy[i])) copy[i] = iso8601_utc(std::get<double>(copy[i]));
    if (chunk_.rows.size() == kCsvChunkRows) flush();
  }

  void finish() override {
    flush();
    out_.flush();
    EGM_REQUIRE(out_.good(), IoError, "cannot write {} (disk full?)", path_);
    out_.close();
  }

 private:
  void flush() {
    // The first flush writes the header even with no rows, so an empty table is still a valid CSV.
    if (chunk_.rows.empty() && !first_) return;
    db::FormatOptions options;
    options.header = first_;
    out_ << db::format_table(chunk_, db::Format::csv, options);
    EGM_REQUIRE(out_.good(), IoError, "cannot write {} (disk full?)", path_);
    chunk_.rows.clear();
    first_ = false;
  }

  std::string path_;
  std::ofstream out_;
  db::Table chunk_;
  std::vector<bool> timestamp_;
  bool first_ = true;  // the header not written yet (an empty table still gets it)
};

}  // namespace

std::string iso8601_utc(double unix_seconds) {
  // floor, not truncation, so times before 1970 split into whole seconds and a positive fraction.
  const double whole = std::floor(unix_seconds);
  int64_t micros = std::llround((unix_seconds - whole) * 1e6);
  auto seconds = static_cast<std::time_t>(whole);
  // Rounding can reach a full second (x.9999996 s): carry it rather than print 7 fraction digits.
  if (micros == 1000000) {
    micros = 0;
    ++seconds;
  }
  std::tm tm{};
  // gmtime_r: UTC, and no shared static buffer as with gmtime.
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

std::unique_ptr<TableSink> open_csv_sink(const std::string& path, const TableSchema& schema) {
  return std::make_unique<CsvSink>(path, schema);
}

}  // namespace egm::exporter
