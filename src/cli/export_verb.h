// egm export's arguments and its work, which runs in egm only: egm-torch
// parses the same command line (main.cpp registers every verb) but never runs
// it. egm-torch must not link the exporter: it links Debian's libprotobuf for
// the TensorBoard files, and libtorch_cpu exports protobuf symbols of its own.
#pragma once

#include <string>

namespace egm::cli {

struct ExportArgs {
  std::string sweep;
  std::string format = "parquet";
  std::string out;
  std::string db;
  bool quiet = false;
};

// run_export.cpp in egm; in egm-torch (export_not_here.cpp) an error.
void run_export(const ExportArgs& args);

}  // namespace egm::cli
