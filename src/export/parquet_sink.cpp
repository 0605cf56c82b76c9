// The module egm-parquet.so (parquet_plugin.h): a TableSink over Apache
// Arrow's C++ Parquet writer. Compiled as C++20, which Arrow 26's headers
// need; it calls no egm library, so it carries no second copy of one.
//
// Rows are appended to one Arrow builder per column and handed to the writer
// as a record batch every kBatchRows rows, so a sink holds one batch and the
// writer's open row group (at most kRowGroupRows rows), whatever the table's
// size. Text columns are dictionary-encoded by the writer (module and name of
// 47 million learned-parameter rows are a handful of strings), every column
// Snappy-compressed.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/util/key_value_metadata.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "export/parquet_plugin.h"
#include "export/table_sink.h"

namespace {

using egm::exporter::ColumnType;

// Rows per record batch (bounds the builders' memory) and per row group (the writer's open buffer).
constexpr int64_t kBatchRows = 65536;
constexpr int64_t kRowGroupRows = 1 << 20;

void check(const arrow::Status& status, const std::string& what) {
  if (!status.ok()) throw std::runtime_error(what + ": " + status.ToString());
}

template <typename T>
T value_or_throw(arrow::Result<T> result, const std::string& what) {
  check(result.status(), what);
  return std::move(result).ValueUnsafe();
}

std::shared_ptr<arrow::DataType> arrow_type(ColumnType type) {
  switch (type) {
    case ColumnType::int64: return arrow::int64();
    case ColumnType::float64: return arrow::float64();
    case ColumnType::text: return arrow::utf8();
    case ColumnType::timestamp: return arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
  }
  // Not reached for a valid ColumnType; the switch above has no default, so the compiler warns on a new one.
  return arrow::utf8();
}

class ParquetSink final : public egm::exporter::TableSink {
 public:
  ParquetSink(const std::string& path, const egm::exporter::TableSchema& schema) : path_(path) {
    arrow::FieldVector fields;
    for (const auto& c : schema.columns) {
      // Nullable: a NULL in the database (std::monostate) is a null in the file.
      fields.push_back(arrow::field(c.name, arrow_type(c.type), /*nullable=*/true));
      types_.push_back(c.type);
    }
    auto metadata = std::make_shared<arrow::KeyValueMetadata>();
    // The sweep's provenance (egm.sweep, egm.spec_hash, ...) in the schema's key-value metadata.
    for (const auto& [key, value] : schema.metadata) metadata->Append(key, value);
    schema_ = arrow::schema(fields, metadata);
    for (const auto& c : schema.columns) {
      switch (c.type) {
        case ColumnType::int64: builders_.push_back(std::make_unique<arrow::Int64Builder>()); break;
        case ColumnType::float64: builders_.push_back(std::make_unique<arrow::DoubleBuilder>()); break;
        case ColumnType::text: builders_.push_back(std::make_unique<arrow::StringBuilder>()); break;
        case ColumnType::timestamp:
          builders_.push_back(
              std::make_unique<arrow::TimestampBuilder>(arrow_type(c.type), arrow::default_memory_pool()));
          break;
      }
    }
    auto out = value_or_throw(arrow::io::FileOutputStream::Open(path), "cannot create " + path);
    parquet::WriterProperties::Builder properties;
    properties.compression(parquet::Compression::SNAPPY)->max_row_group_length(kRowGroupRows);
    // The Arrow schema in the footer: readers get the timestamps' time zone back.
    const auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    writer_ = value_or_throw(parquet::arrow::FileWriter::Open(*schema_, arrow::default_memory_pool(), out,
                                                              properties.build(), arrow_properties),
                             "cannot write " + path);
  }

  void add(const egm::exporter::Row& row) override {
    // A row of the wrong width would shift every later value into the wrong column.
    if (row.size() != builders_.size())
      throw std::runtime_error(path_ + ": a row of " + std::to_string(row.size()) + " values for " +
                               std::to_string(builders_.size()) + " columns");
    for (size_t i = 0; i < row.size(); ++i) append(i, row[i]);
    if (++rows_ == kBatchRows) flush();
  }

  void finish() override {
    flush();
    check(writer_->Close(), "cannot finish " + path_);
  }

 private:
  void append(size_t i, const egm::db::Value& v) {
    arrow::ArrayBuilder& b = *builders_[i];
    if (std::holds_alternative<std::monostate>(v)) {
      check(b.AppendNull(), path_);
      return;
    }
    switch (types_[i]) {
      case ColumnType::int64:
        check(static_cast<arrow::Int64Builder&>(b).Append(std::get<int64_t>(v)), path_);
        break;
      case ColumnType::float64:
        check(static_cast<arrow::DoubleBuilder&>(b).Append(std::get<double>(v)), path_);
        break;
      case ColumnType::text:
        check(static_cast<arrow::StringBuilder&>(b).Append(std::get<std::string>(v)), path_);
        break;
      case ColumnType::timestamp: {
        // UNIX seconds to whole microseconds, rounded (a REAL holds ~0.1 us at 2026's times).
        const double us = std::get<double>(v) * 1e6;
        check(static_cast<arrow::TimestampBuilder&>(b).Append(static_cast<int64_t>(us < 0 ? us - 0.5 : us + 0.5)),
              path_);
        break;
      }
    }
  }

  void flush() {
    if (rows_ == 0) return;
    arrow::ArrayVector arrays;
    // Finish() also resets each builder, ready for the next batch.
    for (auto& b : builders_) arrays.push_back(value_or_throw(b->Finish(), path_));
    const auto batch = arrow::RecordBatch::Make(schema_, rows_, arrays);
    check(writer_->WriteRecordBatch(*batch), "cannot write " + path_);
    rows_ = 0;
  }

  std::string path_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<ColumnType> types_;
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders_;
  std::unique_ptr<parquet::arrow::FileWriter> writer_;
  int64_t rows_ = 0;  // in the builders, not yet written
};

}  // namespace

extern "C" __attribute__((visibility("default"))) egm::exporter::TableSink* egm_parquet_sink_open_v1(
    const std::string* path, const egm::exporter::TableSchema* schema, std::string* error) {
  try {
    // The caller owns the sink (LoadedSink deletes it); exceptions stay on this side of the C boundary.
    return new ParquetSink(*path, *schema);
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}

// The same signature as parquet_plugin.h declares (a mismatch fails to compile).
static_assert(std::is_same_v<decltype(&egm_parquet_sink_open_v1), egm::exporter::ParquetOpenFn>);
