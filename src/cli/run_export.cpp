// egm export's work (egm only; export_verb.h). Bad input (an unknown format, an
// --out that exists and is not empty, a database egm cannot read, an unknown
// sweep, no Parquet module) is one line, exit 2, with nothing written.
#include <cstdio>
#include <iostream>

#include "cli/export_verb.h"
#include "export/exporter.h"

namespace egm::cli {

void run_export(const ExportArgs& o) {
  exporter::ExportOptions options;
  options.format = exporter::parse_export_format(o.format);  // before anything is opened
  options.sweep = o.sweep;
  options.out_dir = o.out;
  options.db_path = o.db;
  const exporter::ExportSummary summary = exporter::export_sweep(options, {}, [&](const std::string& line) {
    if (!o.quiet) std::fprintf(stderr, "egm export: %s\n", line.c_str());
  });
  if (options.format == exporter::ExportFormat::tensorboard) {
    std::cout << "wrote " << summary.tensorboard_runs << " TensorBoard runs (" << summary.files.at(0).rows
              << " events) to " << o.out << "; view them with: tensorboard --logdir " << o.out << "\n";
    return;
  }
  std::cout << "wrote " << summary.files.size() << " " << exporter::to_string(options.format) << " tables to "
            << o.out << ":";
  for (const auto& f : summary.files) std::cout << " " << f.path << " (" << f.rows << " rows)";
  std::cout << "\n";
}

}  // namespace egm::cli
