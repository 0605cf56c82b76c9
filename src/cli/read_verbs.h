// What the read-only verbs share: printing a table in the chosen format, and the
// flags egm analyze and egm report both take (which sweep, which database, and
// how to analyse it), turned into analysis options in one place.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "analysis/param_analysis.h"
#include "analysis/sweep_analysis.h"
#include "db/table_format.h"

namespace egm::cli {

// The table form is for a terminal: a value's control bytes are shown escaped;
// CSV and JSON keep every byte (JSON escapes them itself).
void print_table(const db::Table& table, db::Format format, const db::FormatOptions& options);

struct AnalysisFlags {
  std::string sweep;
  std::string db;
  std::string metric = "final_val";
  double level = 0.95;
  std::string factors;
  bool allow_mixed = false;
  bool allow_mixed_device = false;
  uint64_t seed = 12345;
  std::string cluster_runs = std::to_string(analysis::ParamOptions{}.cluster_runs);
};

// The sweep (positional), --db, --metric, --level and --factors.
void add_sweep_flags(CLI::App* cmd, AnalysisFlags& flags);
// --allow-mixed-world-size, --allow-mixed-device and --seed.
void add_pairing_flags(CLI::App* cmd, AnalysisFlags& flags);
// --cluster-runs.
void add_cluster_runs_flag(CLI::App* cmd, AnalysisFlags& flags);
// The analysis options the flags ask for (ConfigError on a bad metric, factors or --cluster-runs).
analysis::AnalysisOptions analysis_options(const AnalysisFlags& flags);

}  // namespace egm::cli
