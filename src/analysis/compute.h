// The compute statement: what a sweep's numbers cost. Each finished attempt
// counts its wall time (ended_at - started_at) times what it held: on a GPU
// (device cuda...) world_size GPUs, named by the worker (schema v7's
// runs.gpu_name; "GPU" when unknown); on the CPU world_size x threads cores
// (runs.threads; 1 for runs recorded before schema v7, and said so). Summed
// per cell, per variant, per claim (a delta against the baseline counts the
// cells of both variants; the 2x2 interaction the cells of its four) and for
// the sweep. Attempts still running are counted apart, not added. A cell that
// reused a finished run elsewhere (db/reuse.h) costs nothing here: the
// statement counts it apart and says what reuse saved.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "db/results_db.h"
#include "db/table_format.h"

namespace egm::analysis {

struct ComputeTotals {
  int64_t runs = 0;                            // finished attempts counted
  int64_t running = 0;                         // attempts not finished (not counted)
  double core_seconds = 0;                     // CPU: seconds x world_size x threads
  std::map<std::string, double> gpu_seconds;   // by GPU name: seconds x world_size
  int64_t runs_without_threads = 0;            // CPU attempts counted at 1 thread (no thread count recorded)
  // Cells that took a finished run of their identity instead of training
  // (db/reuse.h): not counted above (their original is, where it was trained);
  // what training them again would have cost, from their originals.
  int64_t reused = 0;
  double saved_core_seconds = 0;
  std::map<std::string, double> saved_gpu_seconds;
  void add(const ComputeTotals& other);
};

// A named group of variants whose cells a claim compares.
struct Claim {
  std::string name;  // "delta(ega)", "interaction"
  std::vector<std::string> variants;
};

struct ComputeStatement {
  std::string sweep;
  ComputeTotals total;
  std::vector<std::pair<std::string, ComputeTotals>> variants;  // spec order (first seen)
  std::vector<std::pair<std::string, ComputeTotals>> claims;
  std::map<int64_t, ComputeTotals> cells;                       // by cell id
};

struct SweepAnalysis;
// The claims of an analysis: each delta against the baseline, and the interaction.
std::vector<Claim> claims_of(const SweepAnalysis& analysis);

// One read of the sweep's attempts. An unknown sweep is a ConfigError.
ComputeStatement compute_statement(db::ResultsDb& db, const std::string& sweep, const std::vector<Claim>& claims = {});

// "20 runs, 3.1 GPU-hours on NVIDIA H200; 0.4 core-hours of CPU" (hours with
// two significant digits, at least one decimal; "0 runs" when none finished).
std::string compute_line(const ComputeTotals& totals);
// "compute: this table: ..." then a line per claim and per variant.
std::string render_compute_text(const ComputeStatement& statement);
// scope (sweep, claim, variant), name, runs, running, core_hours, gpu_hours, gpu.
db::Table compute_table(const ComputeStatement& statement);

}  // namespace egm::analysis
