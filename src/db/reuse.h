// Reuse of finished runs (issue 38; schema v11): a cell whose identity
// (run/identity.h; the rule in config/run_config.h) matches a finished run
// anywhere in the database, in any sweep and from any merged input, is linked
// to that run instead of being trained. The link is written where the sweep's
// cells are written (spec::open_sweep, in its transaction), so the coordinator
// finds those cells done. A linked cell gets a runs row of its own (status
// done, no wall time, what ran the original, reused_run and reused_from) and
// the original's results; its metrics and parameter snapshots stay stored once,
// under the original's cell, and every reader (analyze, report, serve, export,
// the params and metric_points views) reads them through row_sources (schema
// v12, db/tables.h) as the linked cell's own; a link to a run of another file
// (--reuse-from) holds a copy. The compute statement counts the original once
// and says what reuse saved.
//
// Only finished runs of finished cells are reused: a cell that failed or was
// interrupted elsewhere is not, and one still running elsewhere is trained
// here again rather than waited for (two coordinators then train the same
// identity once each; nothing waits on another sweep's coordinator).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/merge.h"
#include "db/results_db.h"
#include "run/identity.h"

namespace egm::db {

// What the launch trains with: the identity parts a cell takes from its launch
// rather than from its config.
struct ReuseLaunch {
  std::string corpus_sha256;     // the corpus the workers read
  std::string device_kind;       // "cpu" or "cuda"
  int64_t numerics_version = 0;  // this egm's kNumericsVersion
  // The world size a cell of `variant` trains with (the spec's data parallelism).
  std::function<int(const std::string& variant)> world_size;
};

// One cell linked to a finished run.
struct ReuseLink {
  int64_t cell_id = 0;
  std::string key;          // the cell's key in this sweep
  int64_t run_id = 0;       // the link's runs row
  int64_t original_run = 0; // the run that trained it (0: not in this file: --reuse-from, or gone)
  std::string from;         // runs.reused_from: "run 12 of sweep 'paper_2x2', cell base-s0, trained on node-a"
};

// A trained run as a link names it (runs.reused_from): "run 12 of sweep
// 'paper_2x2', cell base-s0, trained on node-a".
std::string trained_run_text(int64_t run, const std::string& sweep, const std::string& key, const std::string& host);

// egm merge (two inputs trained one identity): the done run `run` of cell
// `cell` becomes a link to `original` (of `original_cell`), as a reused run
// reads: what ran the original, no wall time (started_at = ended_at),
// reused_run and reused_from = `from`, taking the original's results and
// reading its rows (row_sources; the cell's own rows go). Links that named
// `run` name `original`.
void relink_run(Connection& c, int64_t cell, int64_t run, int64_t original_cell, int64_t original,
                const std::string& from);

// The identity of the cell `cell` as `launch` would train it.
RunIdentity wanted_identity(const CellRow& cell, const ReuseLaunch& launch);
// The same for a cell of config `config_hash` and variant `variant`.
RunIdentity wanted_identity(const std::string& config_hash, const std::string& variant, const ReuseLaunch& launch);

// Links every cell of the sweep that is to run (ResultsDb::cells_to_run) to a
// finished run of the same identity elsewhere in the file, and returns the
// links in spec order. All or nothing: its own transaction, or the caller's.
// Prefers a run that was trained over one that is itself a link; a link's
// link names the original. Nothing matches when the launch's identity is not
// known (no corpus, no numerics version).
std::vector<ReuseLink> link_reusable_cells(ResultsDb& db, int64_t sweep_id, const ReuseLaunch& launch);

// egm sweep --reuse-from OTHER (issue 38): the same, from another database,
// opened read-only and checked as egm merge checks its inputs
// (check_input_database, before this is called). A matching run's rows are
// copied in as merge copies them: the link row (reused_from names the run and
// the file; its merge_sources row says which file, read when, by which egm),
// the cell's results, its metrics, parameter snapshots (layouts matched by
// text) and the build's source diff. Call inside the transaction that opens
// the sweep, after link_reusable_cells (a run in this file is taken first).
struct ReuseFromResult {
  std::vector<ReuseLink> links;
  // When nothing matched, why, in one line: "--reuse-from b.sqlite: no finished
  // run matches a cell to run (it holds runs of another corpus: 3f2a9c01b2d4)".
  std::string note;
};
// The inputs of --reuse-from, each checked before anything runs: not the
// sweep's own database `db_path` (its runs are reused without the flag), then
// check_input_database (missing, foreign, damaged, newer, hostile): a
// ConfigError with one line, nothing written.
std::vector<CheckedInput> check_reuse_sources(const std::vector<std::string>& paths, const std::string& db_path);

ReuseFromResult link_from_database(ResultsDb& db, int64_t sweep_id, const ReuseLaunch& launch,
                                   const CheckedInput& input);

// egm sweep --dry-run: what opening the sweep would link, read only. For each
// of `cells` (key, variant and config_hash as the spec expands them; the
// caller leaves out the cells its sweep has done already), the text its
// link's reused_from would hold, from `db` (null: no database yet) or else
// from the first of `from` (checked by check_reuse_sources) that has a
// match, as link_reusable_cells and link_from_database would write it; none:
// the cell trains.
std::vector<std::optional<std::string>> planned_links(ResultsDb* db, const std::vector<CellRow>& cells,
                                                      const ReuseLaunch& launch,
                                                      const std::vector<CheckedInput>& from);

// What a sweep took from elsewhere, for the verbs that show it: each linked
// cell, and the wall time its original took (ended_at - started_at; none when
// the original is not in the file any more).
struct ReusedCell {
  int64_t cell_id = 0;
  std::string key;
  std::string variant;
  std::string from;                       // runs.reused_from
  std::optional<int64_t> original_run;    // runs.reused_run
  std::optional<std::string> original_sweep;  // the sweep that trained it (none: not in the file any more)
  std::optional<double> original_seconds;
  std::string original_device;            // the original's device text ("cpu", "cuda:0")
  int64_t original_world_size = 1;
  std::optional<int64_t> original_threads;
  std::optional<std::string> original_gpu_name;
};
// In spec order; empty before schema v11.
std::vector<ReusedCell> reused_cells(ResultsDb& db, int64_t sweep_id);

// "8 of 16 cells reused from earlier runs (sweep 'paper_2x2': 8)"; empty when none.
std::string reuse_line(const std::vector<ReusedCell>& reused, int64_t total_cells);

}  // namespace egm::db
