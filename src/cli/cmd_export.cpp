// egm export SWEEP --format parquet|tensorboard|csv --out DIR: one sweep of the
// results database as files other tools read (src/export/README.md). Read-only
// on the database; torch-free: its work (run_export.cpp) runs in egm itself.
#include <memory>

#include "cli/commands.h"
#include "cli/export_verb.h"

namespace egm::cli {

void register_export_command(CLI::App& app) {
  auto opts = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand("export", "write a sweep as Parquet tables, TensorBoard event files or CSV (read-only)");
  cmd->add_option("sweep", opts->sweep, "the sweep's name")->required();
  cmd->add_option("--format", opts->format, "parquet, tensorboard or csv")->capture_default_str();
  cmd->add_option("--out", opts->out, "a new (or empty) folder to write into")->required();
  add_db_flag(cmd, opts->db);
  cmd->add_flag("-q,--quiet", opts->quiet, "no progress lines on stderr");
  cmd->footer("Tables: sweep, cells, runs, metrics, params (one row per learned value); "
              "TensorBoard: one run per cell. src/export/README.md lists every column and tag.");
  cmd->callback([opts] { run_export(*opts); });
}

}  // namespace egm::cli
