// The results database: every sweep, its cells (variant x seed), each attempt
// at a cell, and what the workers report (metrics, learned parameters, events).
// The coordinator is its only writer; `egm status/runs/query` open it read-only
// while it runs. The schema (schemas/results.sql, documented table by table in
// schemas/README.md) is embedded in the binary and migrated on open.
//
// Every writing method is one transaction: a reader sees all of it or none of
// it (a finished attempt's results and its 'done' status appear together).
// Not thread-safe: one ResultsDb per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/event_kind.h"
#include "db/ownership.h"
#include "db/sqlite.h"
#include "run/device.h"
#include "run/outcome.h"
#include "run/records.h"

namespace egm::db {

// ---- statuses --------------------------------------------------------------------

enum class SweepStatus { pending, running, done, failed, interrupted, superseded };
enum class CellStatus { pending, running, done, failed, interrupted };
enum class RunStatus { running, done, failed, interrupted };

const char* to_string(SweepStatus status);
const char* to_string(CellStatus status);
const char* to_string(RunStatus status);
// Parse the names above; throw ConfigError listing the valid names.
SweepStatus parse_sweep_status(std::string_view name);
CellStatus parse_cell_status(std::string_view name);
RunStatus parse_run_status(std::string_view name);

// $EGM_DB when set, else "runs/egm.sqlite" (runs/ is git-ignored).
std::string default_db_path();

// ---- rows and inputs ----------------------------------------------------------

struct SweepRow {
  int64_t id = 0;
  std::string name;
  std::string spec_json;
  std::string spec_hash;
  double created_at = 0;
  double updated_at = 0;
  SweepStatus status = SweepStatus::pending;
  std::optional<std::string> slurm_job_id;
  std::optional<double> heartbeat_at;  // the coordinator's last sign of life (schema v2; nullopt: none, or a v1 file)
  // Schema v8 (nullopt in an older file): the coordinator that holds the sweep
  // (none: nobody), and the corpus it trains on ("unknown" for a sweep that
  // ran before egm recorded it; none: never started).
  std::optional<SweepOwner> owner;
  std::optional<std::string> corpus_sha256;
  std::optional<int64_t> corpus_bytes;
  std::optional<std::string> corpus_path;
};

// The corpus of a sweep (sweeps.corpus_*), as its workers read it.
struct SweepCorpus {
  std::string sha256;
  std::optional<int64_t> bytes;
  std::string path;
};
// "sha256 3f2a...9c01 (1115394 bytes, /data/input.txt)", or "unknown (...)" for
// a sweep recorded before v9, or "not recorded (...)" (never started by a coordinator).
std::string describe_corpus(const SweepRow& sweep);

// Liveness: a running coordinator writes sweeps.heartbeat_at every
// kHeartbeatIntervalS; a sweep still 'running' with no heartbeat for
// kStaleAfterS has lost its coordinator (killed, node gone).
inline constexpr double kHeartbeatIntervalS = 5;
inline constexpr double kStaleAfterS = 3 * kHeartbeatIntervalS;
// The last heartbeat of a sweep that says 'running' but whose coordinator is
// gone (no heartbeat for kStaleAfterS at `now`, UNIX s); nullopt when it is
// alive, not running, or has no heartbeat at all (nothing to judge by).
std::optional<double> stale_since(const SweepRow& sweep, double now);

// What to do when a sweep's name exists with another spec (--new-sweep,
// --extend, or neither).
enum class ChangedSpec {
  refuse,     // a ConfigError that names the two ways on
  new_sweep,  // the old sweep is renamed NAME@ID ('superseded') and a new one starts
  extend,     // the sweep takes the new spec and keeps its cells, as long as
              // ensure_cells finds every one unchanged (more seeds, variants
              // or grid values); the old spec stays in a 'sweep_extended' event
};

struct SweepOpenResult {
  SweepRow sweep;
  bool created = false;                      // false: an existing sweep with this spec was loaded
  std::optional<std::string> superseded_as;  // new_sweep: the old sweep's new name ("NAME@ID")
  std::optional<std::string> extended_from;  // extend: the spec hash the sweep had before
};

// One cell as the spec expands it (see spec::to_cell_inputs).
struct CellInput {
  std::string key;          // "VARIANT-sSEED", unique in the sweep
  std::string variant;
  int64_t seed = 0;
  std::string config_json;  // the full RunConfig
  std::string config_hash;
  int64_t max_steps = 0;
  int max_attempts = 1;     // failed attempts allowed (1 + retries)
  std::optional<int64_t> grid_point;     // the spec's grid point (0-based); none without a grid
  std::optional<std::string> grid_json;  // its values: {"train.lr": 0.001}
};

struct CellRow {
  int64_t id = 0;
  int64_t sweep_id = 0;
  std::string sweep_name;
  int64_t position = 0;  // order in the spec's expansion
  std::string key;
  std::string variant;
  int64_t seed = 0;
  std::string config_json;
  std::string config_hash;
  int64_t max_steps = 0;
  CellStatus status = CellStatus::pending;
  int attempts = 0;      // attempts started (any outcome)
  int failures = 0;      // attempts that ended 'failed'
  int max_attempts = 1;  // a failed cell is retried while failures < max_attempts
  std::optional<std::string> last_error;
  // What the done attempt measured: the cells columns final_val, best_val,
  // full_val, ar_val, ar_ref_val (final_train and tokens_per_s are not kept
  // per cell), and the step it ended at.
  Measurements results;
  std::optional<int64_t> final_step;
  std::optional<int64_t> latest_step;  // highest 'train' metric step recorded
  double updated_at = 0;
  std::optional<int64_t> grid_point;     // see CellInput
  std::optional<std::string> grid_json;
  // Measurements stored as neither a number nor NULL (TEXT or BLOB in a REAL
  // column: a database edited elsewhere), read as missing in `results`.
  int non_numeric = 0;
};

// How a failed attempt failed, beyond its one-line error (finish_attempt).
struct FailureInfo {
  std::string detail;     // the full text (a C++ stack trace included): the attempt_failed event's body
  bool retriable = true;  // false: it would fail the same way again; the cell is failed for good at once
};

// Where and how an attempt runs (runs columns of the same names): what the
// coordinator expects at start_attempt, replaced by what the worker reports
// (set_run_setup) once the run has started.
struct RunInfo {
  std::string host;
  DeviceName device;
  int world_size = 1;
  Backend backend = Backend::none;
  std::string torch_version;
  std::string git_commit;
  std::optional<int64_t> resumed_from_step;  // nullopt: from scratch
  // The build's source modification (util/source_state.h); none: a clean tree
  // or not recorded (schema < 6). Its text: ResultsDb::source_diff.
  std::optional<std::string> source_diff_sha256;
  // What the compute statement counts (schema v7; nullopt: not recorded, or an
  // older file): intra-op threads of each of the world_size ranks, and the
  // GPU's name for a CUDA run ("NVIDIA H200").
  std::optional<int64_t> threads;
  std::optional<std::string> gpu_name;
  // The numerics version of the egm that trains it (config/run_config.h,
  // kNumericsVersion; schema v11): part of the run's identity, by which a later
  // sweep reuses it (db/reuse.h). nullopt: not known (never reused).
  std::optional<int64_t> numerics_version;
};

// A build's source modification as stored (table source_diffs).
struct SourceDiff {
  std::string sha256;
  int64_t size = 0;   // of the whole diff
  std::string diff;   // the whole diff, or its first 512 KiB (size says which)
  bool truncated() const { return static_cast<int64_t>(diff.size()) < size; }
};

struct RunRow {
  int64_t id = 0;
  int64_t cell_id = 0;
  std::string sweep_name;
  std::string cell_key;
  std::string variant;
  int64_t seed = 0;
  int attempt = 0;
  RunStatus status = RunStatus::running;
  RunInfo info;
  double started_at = 0;
  std::optional<double> ended_at;
  std::optional<std::string> error;
  // Schema v11 (db/reuse.h): for a cell that took a finished run of the same
  // identity instead of training, where it came from ("run 12 of sweep
  // 'paper_2x2', cell base-s0, trained on node-a"); nullopt: trained by this attempt.
  std::optional<std::string> reused_from;
};

// The metrics.split column holds MetricSplit's names (run/records.h); SQL
// that selects one writes split_literal(MetricSplit::eval_val), never the text.
std::string split_literal(MetricSplit split);  // "'eval_val'"
// The cells' measurement columns (cell_measurements(), run/outcome.h) in SQL:
// each name after `prefix`, joined by `separator`: "c.final_val, c.best_val, ...";
// a column that a file at `schema_version` does not have yet reads as NULL.
std::string measurement_list(std::string_view prefix = "", std::string_view separator = ", ",
                             int schema_version = std::numeric_limits<int>::max());
// The cells a launch hands out (ResultsDb::cells_to_run: pending, interrupted,
// running, failed with attempts left) as an SQL condition on cells `alias`.
std::string cells_to_run_condition(std::string_view alias);

struct MetricPoint {
  int64_t cell_id = 0;
  int64_t run_id = 0;
  int64_t step = 0;
  MetricSplit split = MetricSplit::train;
  std::optional<double> loss;  // NaN is stored as NULL by SQLite
  std::optional<double> lr;
  std::optional<double> tokens_per_s;
  double time = 0;             // UNIX seconds; 0 = when recorded
};

// A learned parameter, e.g. {module "mope", layer -1, idx i, name "sigma"} or
// {module "ega", layer l, idx head, name "tau"}.
struct ParamValue {
  int64_t cell_id = 0;
  int64_t run_id = 0;
  int64_t step = 0;
  std::string module;
  int64_t layer = -1;
  int64_t idx = 0;
  std::string name;
  double value = 0;
};

struct EventInput {
  std::optional<int64_t> sweep_id;
  std::optional<int64_t> cell_id;
  std::optional<int64_t> run_id;
  EventKind kind = EventKind::sweep_created;
  std::string message;
  double time = 0;      // 0 = when recorded
  std::optional<int64_t> step;  // the training step it is about, when it has one (schema v4)
};

struct EventRow {
  int64_t id = 0;
  double time = 0;
  std::optional<int64_t> sweep_id;
  std::optional<int64_t> cell_id;
  std::optional<int64_t> run_id;
  EventKind kind = EventKind::sweep_created;  // a stored kind egm does not know is a DbError
  std::string message;
  std::optional<int64_t> step;  // NULL, or a file older than schema v4
};

// One look of a sequential sweep (`egm sweep --until`, table looks, schema
// v10): a claim's anytime-valid confidence sequence after a batch of seeds.
struct LookRow {
  int64_t look = 0;   // 1, 2, ...: the look after each batch
  std::string claim;  // "delta(ega)", "interaction"
  int64_t seeds = 0;  // the seeds the sequence had seen
  std::optional<double> estimate;
  std::optional<double> lower;  // none: unbounded
  std::optional<double> upper;
  std::optional<double> p_anytime;
  std::string decision;  // undecided | positive | negative | narrow
  bool settled = false;
  std::string next;      // what the sweep did after this look
  double time = 0;       // when it was taken (UNIX s)
  std::string method;    // the sequence, as stats::t_mixture_method_name()
  std::string params;    // its parameters: "alpha=... family_alpha=... half_width=..."
};

// What one coordinator message carries; written in one transaction.
struct RecordBatch {
  std::vector<MetricPoint> metrics;
  std::vector<ParamValue> params;
  std::vector<EventInput> events;
};

struct RunningCell {
  int64_t cell_id = 0;
  std::string key;
  std::string variant;
  int64_t seed = 0;
  int64_t run_id = 0;
  int attempt = 0;
  std::string host;
  std::string device;
  int64_t max_steps = 0;
  double started_at = 0;
  std::optional<int64_t> step;        // latest 'train' step of this attempt
  std::optional<double> loss;         // its loss
  std::optional<double> steps_per_s;  // over this attempt's 'train' metrics
};

struct SweepProgress {
  SweepRow sweep;
  int64_t total = 0;
  int64_t pending = 0;
  int64_t running = 0;
  int64_t done = 0;
  int64_t failed = 0;            // of which `exhausted` have no retries left
  int64_t exhausted = 0;
  int64_t interrupted = 0;
  int64_t steps_total = 0;       // sum of max_steps over all cells
  int64_t steps_given_up = 0;    // max_steps of the `exhausted` cells (they will not run again)
  int64_t steps_done = 0;        // done cells' max_steps + running cells' latest step
  std::vector<RunningCell> running_cells;
  // Seconds until the runnable cells finish, from the running attempts' step
  // rates (or, with none, the mean duration of finished attempts).
  std::optional<double> eta_s;
};

// Filters for list_cells / list_runs; empty = no constraint, lists = any of.
struct CellFilter {
  std::optional<int64_t> sweep_id;
  std::vector<std::string> sweeps;     // sweep names
  std::vector<std::string> variants;
  std::vector<int64_t> seeds;
  std::vector<std::string> statuses;   // cell statuses (list_cells) or run statuses (list_runs)
  bool include_superseded = false;     // sweeps renamed aside by new_sweep
  // list_cells: read each cell's latest_step (a subquery per cell, through a
  // link's original for a reused one: about half a 100,000-cell listing's time);
  // off where no progress is shown (the coordinator's setup and end, the launch's
  // done-cell checks), leaving latest_step unset.
  bool latest_step = true;
};

// ---- the database ------------------------------------------------------------------

class ResultsDb {
 public:
  // read_write_create / read_write: WAL, busy_timeout, foreign keys, and
  // migration to the current schema. read_only: the file must exist and be an
  // egm database at this schema version or an older one (a clear DbError for a
  // newer one); nothing is written, and columns an older file lacks read as
  // absent (e.g. heartbeat_at of a v1 file).
  ResultsDb(const std::string& path, OpenMode mode);
  ResultsDb(ResultsDb&&) noexcept;
  ResultsDb& operator=(ResultsDb&&) noexcept;
  ~ResultsDb();

  Connection& connection() { return connection_; }
  const Connection& connection() const { return connection_; }
  const std::string& path() const { return connection_.path(); }
  bool read_only() const { return connection_.mode() == OpenMode::read_only; }
  int schema_version() const { return schema_version_; }
  // Times written by this object come from `clock` (UNIX seconds); for tests.
  void set_clock(std::function<double()> clock);

  // ---- sweeps
  // Creates the sweep, or loads it when one with this name and spec_hash
  // exists. A name that exists with another spec_hash is handled as
  // `on_change` says (ChangedSpec above); new_sweep with an unchanged spec
  // also starts over, extend with an unchanged spec just loads it. With
  // extend, call ensure_cells in the same transaction: it refuses a spec that
  // drops or changes a cell, and the whole change is rolled back.
  SweepOpenResult create_or_load_sweep(const std::string& name, const std::string& spec_json,
                                       const std::string& spec_hash, ChangedSpec on_change);
  // The same, with new_sweep ? ChangedSpec::new_sweep : ChangedSpec::refuse.
  SweepOpenResult create_or_load_sweep(const std::string& name, const std::string& spec_json,
                                       const std::string& spec_hash, bool new_sweep) {
    return create_or_load_sweep(name, spec_json, spec_hash, new_sweep ? ChangedSpec::new_sweep : ChangedSpec::refuse);
  }
  std::optional<SweepRow> find_sweep(const std::string& name);
  SweepRow sweep(int64_t sweep_id);
  std::vector<SweepRow> list_sweeps(bool include_superseded = false);
  void set_sweep_status(int64_t sweep_id, SweepStatus status);
  void set_slurm_job_id(int64_t sweep_id, const std::string& job_id);
  // The coordinator's heartbeat: sweeps.heartbeat_at = now (set_sweep_status
  // to running writes one too). Composes with an outer Transaction.
  void heartbeat(int64_t sweep_id);
  // Ownership (schema v9; db/ownership.h). claim_sweep makes `owner` the
  // sweep's owner (its heartbeat = now); owned_heartbeat refreshes both
  // heartbeats only while `owner` still holds the sweep and says whether it
  // does; release_sweep clears the owner if it is still `owner`. On an older
  // schema (a binary that embeds none) they do nothing and owned_heartbeat is
  // heartbeat(). Each composes with an outer Transaction.
  void claim_sweep(int64_t sweep_id, const SweepOwner& owner);
  bool owned_heartbeat(int64_t sweep_id, const SweepOwner& owner);
  void release_sweep(int64_t sweep_id, const SweepOwner& owner);
  // Stores the sweep's corpus (schema v9).
  void set_sweep_corpus(int64_t sweep_id, const SweepCorpus& corpus);

  // ---- cells
  // Inserts the cells that are missing and returns every cell's id, in input
  // order. Idempotent. Refuses (ConfigError, nothing written) when the sweep
  // already holds a cell whose config_hash differs for the same variant and
  // seed, or cells the input does not have: the spec expands differently than
  // when the sweep was created (e.g. the code's preset changed): use --new-sweep.
  std::vector<int64_t> ensure_cells(int64_t sweep_id, const std::vector<CellInput>& cells);
  // Marks cells and attempts left 'running' by a previous coordinator as
  // 'interrupted' (the coordinator is the only writer, so at its start nothing
  // is really running). Returns the number of cells changed.
  int recover_interrupted(int64_t sweep_id, const std::string& reason = "coordinator stopped");
  // Cells to hand out, in spec order: pending, interrupted, failed with
  // failures < max_attempts, and any still marked running (see above).
  std::vector<CellRow> cells_to_run(int64_t sweep_id);
  CellRow cell(int64_t cell_id);
  std::vector<CellRow> list_cells(const CellFilter& filter = {});

  // ---- attempts
  // Starts attempt attempts+1 of a cell: inserts a runs row, marks the cell
  // running, and closes any attempt of the cell still marked running as
  // interrupted. Returns the run id. A cell that is done is refused.
  int64_t start_attempt(int64_t cell_id, const RunInfo& info);
  // Ends an attempt (status done, failed or interrupted) in one transaction:
  // the runs row, the cell's status, and with done the cell's results.
  // failed: counts against max_attempts and sets the cell's last_error (one
  // line); `failure.detail` (the full text) goes to the attempt_failed event;
  // not `failure.retriable`: max_attempts is lowered to the failures so far, so
  // the cell is failed for good (no retry now, nor when the spec is run again).
  // interrupted (preempted, worker lost): does not count as a failure.
  // `step` (the step it ended at) goes to the event's step column, and with
  // done to the cell's final_step; `measured` (with done) to its results.
  void finish_attempt(int64_t run_id, RunStatus status, const std::string& error = "",
                      const Measurements& measured = {}, const FailureInfo& failure = {},
                      std::optional<int64_t> step = std::nullopt);
  // The attempt of `outcome` (status done) in one call: finish_attempt(done)
  // with its measurements and step.
  void finish_done(int64_t run_id, const RunOutcome& outcome);
  // What a running attempt really runs with, as its worker reports it when the
  // run starts: replaces start_attempt's device, backend and world size (the
  // coordinator's prediction).
  void set_run_setup(int64_t run_id, const DeviceName& device, Backend backend, int world_size);
  // Records the checkpoint step a running attempt resumed from: the worker
  // learns it after start_attempt, when the trainer has loaded the checkpoint.
  void set_resumed_from_step(int64_t run_id, int64_t step);
  // Keeps a build's modification (once per sha256; a second store is a no-op).
  void store_source_diff(const SourceDiff& diff);
  // The stored modification of that sha256; none when unknown (or schema < 6).
  std::optional<SourceDiff> source_diff(const std::string& sha256);
  RunRow run(int64_t run_id);
  std::vector<RunRow> list_runs(const CellFilter& filter = {});

  // ---- worker reports (each call one transaction)
  // Metrics and params are upserts on their keys: a resumed attempt that redoes
  // steps overwrites the earlier values instead of duplicating them.
  void record_metrics(const std::vector<MetricPoint>& points);
  void record_params(const std::vector<ParamValue>& values);
  int64_t record_event(const EventInput& event);
  // Many events at once: in the caller's transaction when it holds one (no
  // savepoint per event), else in one of their own.
  void record_events(const std::vector<EventInput>& events);
  void record_batch(const RecordBatch& batch);
  std::vector<EventRow> list_events(std::optional<int64_t> sweep_id, int limit = 100);
  // A sweep's looks in look order (none before schema v10, or when it was not sequential).
  std::vector<LookRow> list_looks(int64_t sweep_id);
  // The rows of the sweep's last look (every claim it judged); empty without looks.
  std::vector<LookRow> last_look(int64_t sweep_id);
  // Records one look, every claim's row, in one transaction (`look` set in each row).
  void record_look(int64_t sweep_id, const std::vector<LookRow>& rows);
  // Sets what the sweep did after look `look` (every claim's row): the look's
  // decision, amended when something else happened (a stop signal, a larger budget).
  void set_look_next(int64_t sweep_id, int64_t look, const std::string& next);

  // ---- progress (one read snapshot)
  SweepProgress sweep_progress(int64_t sweep_id);

 private:
  double now() const;
  void require_writable(const char* what) const;
  void write_metrics(const std::vector<MetricPoint>& points);
  void write_params(const std::vector<ParamValue>& values);
  int64_t write_event(const EventInput& event);
  std::string sweep_columns() const;
  std::string cell_columns(bool latest_step = true) const;

  Connection connection_;
  int schema_version_ = 0;
  std::function<double()> clock_;
};

// The read-only verbs' way in: `path`, or default_db_path() when empty,
// opened read_only (a missing file is a DbError and is not created).
ResultsDb open_for_reading(const std::string& path = "");

}  // namespace egm::db
