// The Parquet writer, loaded when an export asks for it. It is Apache Arrow's
// C++ Parquet writer (libarrow and libparquet from the pinned pyarrow wheel,
// scripts/arrow_env.sh: 62 MB), built into the module egm-parquet.so next to
// the egm binary rather than into egm itself, so that the other verbs neither
// load nor carry it: every `egm status` would map it at start, and the GPU
// machine's bundle (scripts/device_bundle.sh, 64 MiB at most) has no room for
// it. Without the module, `egm export --format parquet` is one line, exit 2,
// and the other formats work.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "export/table_sink.h"

namespace egm::exporter {

// Opens PATH for one table (throws on failure).
using SinkFactory = std::function<std::unique_ptr<TableSink>(const std::string& path, const TableSchema& schema)>;

// The module next to the running executable (egm-parquet.so), or `module_path`
// when given; an IoError naming the file when it cannot be loaded.
SinkFactory load_parquet_sinks(const std::string& module_path = "");

// The module's one entry point (extern "C", looked up by this name):
// returns a new sink, or nullptr with *error set. Its sinks' add/finish throw
// std::runtime_error with Arrow's message.
inline constexpr const char* kParquetEntryPoint = "egm_parquet_sink_open_v1";
using ParquetOpenFn = TableSink* (*)(const std::string* path, const TableSchema* schema, std::string* error);

}  // namespace egm::exporter
