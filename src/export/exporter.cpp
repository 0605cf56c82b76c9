// egm export: the sweep's tables (db/export_tables.h) written as CSV, Parquet or
// TensorBoard event files into a folder checked before anything is written.
#include "export/exporter.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "db/results_db.h"
#include "export/csv_sink.h"
#include "db/export_tables.h"
#include "export/tensorboard.h"
#include "util/enum_names.h"
#include "util/error.h"
#include "egm/version_info.h"

namespace egm::exporter {
namespace {

namespace fs = std::filesystem;

void check_out_dir(const fs::path& out) {
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  // A missing --out is created later; only an existing one must be an empty folder.
  if (!fs::exists(st)) return;
  EGM_REQUIRE(fs::is_directory(st), ConfigError, "{} exists and is not a folder; egm export writes a new folder",
              out.string());
  EGM_REQUIRE(fs::is_empty(out, ec) && !ec, ConfigError,
              "{} exists and is not empty; egm export writes into a new or empty folder (choose another --out)",
              out.string());
}

// The database, read-only; its refusal (missing, not SQLite, not egm's, from a
// newer egm) in one line: SQLite's own errors carry the SQL on a second one.
db::ResultsDb open_input(const std::string& path) {
  try {
    return db::open_for_reading(path);
  } catch (const DbError& e) {
    const std::string message = e.what();
    EGM_THROW(DbError, "{}", message.substr(0, message.find('\n')));
  }
}

// Removes the partial output unless released (the export finished).
class PartialDir {
 public:
  explicit PartialDir(fs::path path) : path_(std::move(path)) {}
  ~PartialDir() {
    if (!released_) {
      std::error_code ec;
      // The error_code overload: a destructor that runs while an export error unwinds must not throw.
      fs::remove_all(path_, ec);
    }
  }
  void release() { released_ = true; }

 private:
  fs::path path_;
  bool released_ = false;
};

constexpr const char* kFormatNames[] = {"parquet", "tensorboard", "csv"};  // in enum order

}  // namespace

ExportFormat parse_export_format(const std::string& name) {
  return parse_enum<ExportFormat, ConfigError>(name, kFormatNames, "export format");
}

const char* to_string(ExportFormat format) { return enum_name(format, kFormatNames); }

ExportSummary export_sweep(const ExportOptions& options, SinkFactory parquet,
                           const std::function<void(const std::string&)>& progress) {
  EGM_REQUIRE(!options.out_dir.empty(), ConfigError, "egm export needs --out DIR");
  const fs::path out = fs::absolute(options.out_dir).lexically_normal();
  // "out/" normalises to an empty filename; the folder meant is its parent path.
  const fs::path out_clean = out.has_filename() ? out : out.parent_path();
  check_out_dir(out_clean);
  db::ResultsDb results = open_input(options.db_path);
  const std::optional<db::SweepRow> sweep = results.find_sweep(options.sweep);
  if (!sweep) {
    std::string names;
    // The refusal lists the sweeps the database does hold, so a mistyped name is easy to fix.
    for (const db::SweepRow& s : results.list_sweeps()) names += (names.empty() ? "" : ", ") + s.name;
    EGM_THROW(ConfigError, "no sweep named '{}' in {} (its sweeps: {})", options.sweep, results.path(),
              names.empty() ? "none" : names);
  }
  // The module is loaded only for Parquet, so CSV and TensorBoard exports never need Arrow.
  if (options.format == ExportFormat::parquet && !parquet) parquet = load_parquet_sinks();

  // A read snapshot: every table of one export sees the same committed state
  // while a coordinator goes on writing.
  db::Transaction snapshot(results.connection(), db::Transaction::Kind::deferred);
  // A new --out is built beside it and renamed into place. An existing empty
  // folder (a symbolic link to one, a mount point, a shared folder with its
  // own mode, group and ACLs) is kept: the export is built in a hidden folder
  // inside it and moved up when done.
  std::error_code ec;
  const bool into_existing = fs::is_directory(out_clean, ec);
  const fs::path parent = out_clean.parent_path();
  if (!into_existing) fs::create_directories(parent);
  // Beside --out (or inside it): the final rename stays on one file system. The pid keeps exports apart.
  const fs::path partial = into_existing
                               ? out_clean / fmt::format(".egm-export-{}", getpid())
                               : parent / fmt::format(".{}.egm-export-{}", out_clean.filename().string(), getpid());
  // A leftover of a crashed export that had the same pid would otherwise be mixed in.
  fs::remove_all(partial);
  fs::create_directory(partial);
  PartialDir cleanup(partial);

  ExportSummary summary;
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  if (options.format == ExportFormat::tensorboard) {
    const TensorBoardSummary tb = write_tensorboard(results, sweep->id, partial.string(), [&](int64_t cells) {
      if (progress) progress(fmt::format("tensorboard: {} cells ({:.0f} s)", cells, elapsed()));
    });
    summary.tensorboard_runs = tb.runs;
    summary.files.push_back({"", tb.events});
  } else {
    const int version = results.schema_version();
    for (const db::ExportTable& table : db::export_tables(version)) {
      // A table only some databases have (a sequential sweep's looks) is skipped where it is absent.
      if (!table.requires_table.empty() && !db::has_table(results, table.requires_table)) continue;
      TableSchema schema{table.name, {}, {}};
      for (const db::SourceColumn& c : table.columns) schema.columns.push_back(c.column);
      // Provenance for each file (Parquet key-value metadata; the CSV sink has nowhere to put it).
      schema.metadata = {{"egm.table", table.name},
                         {"egm.sweep", sweep->name},
                         {"egm.spec_hash", sweep->spec_hash},
                         {"egm.schema_version", std::to_string(version)},
                         {"egm.git_commit", EGM_GIT_COMMIT}};
      const std::string name = table.name + (options.format == ExportFormat::parquet ? ".parquet" : ".csv");
      const std::string path = (partial / name).string();
      std::unique_ptr<TableSink> sink =
          options.format == ExportFormat::parquet ? parquet(path, schema) : open_csv_sink(path, schema);
      int64_t counted = 0;
      const int64_t rows = db::read_export_rows(results, table, sweep->id, [&](const Row& row) {
        sink->add(row);
        if (++counted % 1000000 == 0 && progress)
          progress(fmt::format("{}: {} rows ({:.0f} s)", table.name, counted, elapsed()));
      });
      sink->finish();
      summary.files.push_back({name, rows});
      if (progress) progress(fmt::format("{}: {} rows ({:.1f} s)", name, rows, elapsed()));
    }
  }
  // Read-only: the commit just ends the snapshot, before the files are moved into place.
  snapshot.commit();

  if (into_existing) {
    // Moved entry by entry: the existing folder itself (a link, a mount, its ACLs) is kept.
    for (const fs::directory_entry& e : fs::directory_iterator(partial)) {
      fs::rename(e.path(), out_clean / e.path().filename(), ec);
      EGM_REQUIRE(!ec, IoError, "cannot move {} into {}: {}", e.path().string(), out_clean.string(), ec.message());
    }
    fs::remove(partial, ec);
  } else {
    fs::rename(partial, out_clean, ec);
    EGM_REQUIRE(!ec, IoError, "cannot rename {} to {}: {}", partial.string(), out_clean.string(), ec.message());
  }
  // Only now is the output complete; a throw anywhere above removes the partial folder.
  cleanup.release();
  return summary;
}

}  // namespace egm::exporter
