// egm export: one sweep of a results database into files the tools
// researchers use (src/export/README.md): Parquet tables, TensorBoard event
// files, or CSV tables. Read-only on the database; rows are streamed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "export/parquet_plugin.h"

namespace egm::exporter {

enum class ExportFormat { parquet, tensorboard, csv };

// "parquet" | "tensorboard" | "csv"; a ConfigError naming them otherwise.
ExportFormat parse_export_format(const std::string& name);
const char* to_string(ExportFormat format);

struct ExportOptions {
  std::string db_path;  // empty: db::default_db_path()
  std::string sweep;
  ExportFormat format = ExportFormat::parquet;
  std::string out_dir;  // created; must not exist, or be an empty folder
};

struct ExportedFile {
  std::string path;   // under out_dir ("cells.parquet"; "tensorboard": the folder itself)
  int64_t rows = 0;   // rows, or for TensorBoard the events written
};

struct ExportSummary {
  std::vector<ExportedFile> files;
  int64_t tensorboard_runs = 0;
};

// Checks everything a user can get wrong before writing anything: out_dir
// exists and is not an empty folder, the database is missing, not an egm
// database or from a newer schema, the sweep is unknown, the Parquet module
// cannot be loaded: an egm::Error each, and nothing is written. Then writes
// into a folder beside out_dir and renames it to out_dir at the end, so a
// failure half-way (a full disk) leaves nothing either. `parquet` opens the
// Parquet sinks (default: load_parquet_sinks()); `progress` gets a line now
// and then on long tables.
ExportSummary export_sweep(const ExportOptions& options, SinkFactory parquet = {},
                           const std::function<void(const std::string&)>& progress = {});

}  // namespace egm::exporter
