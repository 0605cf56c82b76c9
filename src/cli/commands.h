// The verbs of the `egm` command. Each lives in its own cmd_<verb>.cpp and
// adds one CLI11 subcommand; main.cpp only wires them together.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace egm::cli {

// --db of every verb that opens the results database: the flag defined once
// (db::default_db_path() applies the default when it is left empty).
inline CLI::Option* add_db_flag(CLI::App* cmd, std::string& db) {
  return cmd->add_option("--db", db, "results database (default: $EGM_DB, else runs/egm.sqlite)");
}

void register_train_command(CLI::App& app);    // cmd_train.cpp: train one run
void register_bench_command(CLI::App& app);    // cmd_bench.cpp: time training steps
void register_audit_command(CLI::App& app);    // cmd_audit.cpp: causality audit
void register_data_command(CLI::App& app);     // cmd_data.cpp: fetch/verify the corpus
void register_sweep_command(CLI::App& app);    // cmd_sweep.cpp: run a sweep under mpirun
void register_status_command(CLI::App& app);   // cmd_status.cpp: sweep progress from the db
void register_runs_command(CLI::App& app);     // cmd_runs.cpp: list runs with filters
void register_query_command(CLI::App& app);    // cmd_query.cpp: read-only SQL
void register_analyze_command(CLI::App& app);  // cmd_analyze.cpp: multi-seed statistics
void register_report_command(CLI::App& app);   // cmd_report.cpp: tables and plots
void register_submit_command(CLI::App& app);   // cmd_submit.cpp: render + sbatch
void register_serve_command(CLI::App& app);    // cmd_serve.cpp: read-only HTTP view of the db
void register_export_command(CLI::App& app);   // cmd_export.cpp: Parquet / TensorBoard / CSV files of a sweep
void register_merge_command(CLI::App& app);    // cmd_merge.cpp: combine sweeps of several databases
void register_plan_command(CLI::App& app);     // cmd_plan.cpp: seeds needed per claim, from the pilot
void register_paper_command(CLI::App& app);    // cmd_paper.cpp: the paper's scorecard from the db

}  // namespace egm::cli
