// ResultsDb: the typed door to the results database (sweeps, cells, attempts,
// metrics, parameters, events, looks) for the coordinator and the reading verbs.
#include "db/results_db.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "db/migrations.h"
#include "db/param_pack.h"
#include "db/schema_check.h"
#include "db/tables.h"
#include "util/enum_names.h"
#include "util/error.h"
#include "util/eta.h"
#include "util/process_info.h"

namespace egm::db {
namespace {

// Stored as text in the status columns: renaming one would make every existing file unreadable.
constexpr const char* kSweepStatus[] = {"pending", "running", "done", "failed", "interrupted", "superseded"};
constexpr const char* kCellStatus[] = {"pending", "running", "done", "failed", "interrupted"};
constexpr const char* kRunStatus[] = {"running", "done", "failed", "interrupted"};

// WHERE clauses with their parameters, bound in order.
class Where {
 public:
  void add(std::string clause) { clauses_.push_back(std::move(clause)); }
  void add(std::string clause, Value v) {
    clauses_.push_back(std::move(clause));
    binds_.push_back(std::move(v));
  }
  // Binds one ? per value; an empty list adds no clause (no filter), never "IN ()", which SQLite rejects.
  template <typename T>
  void any_of(const std::string& column, const std::vector<T>& values) {
    if (values.empty()) return;
    std::vector<std::string> marks(values.size(), "?");
    clauses_.push_back(fmt::format("{} IN ({})", column, fmt::join(marks, ", ")));
    for (const auto& v : values) {
      if constexpr (std::is_integral_v<T>)
        binds_.emplace_back(static_cast<int64_t>(v));
      else
        binds_.emplace_back(std::string(v));
    }
  }
  // Empty when there is no filter: the caller appends it to a SELECT as it is.
  std::string sql() const {
    return clauses_.empty() ? "" : fmt::format(" WHERE {}", fmt::join(clauses_, " AND "));
  }
  // SQLite's parameter indices start at 1.
  void bind(Statement& s) const {
    int i = 0;
    for (const auto& v : binds_) {
      ++i;
      if (const auto* n = std::get_if<int64_t>(&v))
        s.bind(i, *n);
      else if (const auto* d = std::get_if<double>(&v))
        s.bind(i, *d);
      else if (const auto* t = std::get_if<std::string>(&v))
        s.bind(i, *t);
      else
        s.bind(i, nullptr);
    }
  }

 private:
  std::vector<std::string> clauses_;
  std::vector<Value> binds_;
};

// status_column differs by caller: c.status for cells, r.status for their runs.
void filter_cells(Where& w, const CellFilter& f, const char* status_column) {
  if (f.sweep_id) w.add("s.id = ?", *f.sweep_id);
  w.any_of("s.name", f.sweeps);
  w.any_of("c.variant", f.variants);
  w.any_of("c.seed", f.seeds);
  w.any_of(status_column, f.statuses);
  // A superseded sweep shows when asked for by id or by its NAME@ID.
  if (!f.include_superseded && !f.sweep_id && f.sweeps.empty()) w.add("s.status <> 'superseded'");
}

// heartbeat_at came with schema v2; a v1 file (read-only) has none.
// Missing columns are selected as NULL, so read_sweep's column indices hold for every version.
std::string sweep_columns_for(int schema_version) {
  return std::string("SELECT s.id, s.name, s.spec_json, s.spec_hash, s.created_at, s.updated_at, s.status, "
                     "s.slurm_job_id, ") +
         (schema_version >= 2 ? "s.heartbeat_at" : "NULL") +
         // owner and corpus came with schema v9
         (schema_version >= 9 ? ", s.owner_host, s.owner_pid, s.owner_started_at, s.owner_slurm_job, s.owner_heartbeat, "
                                "s.corpus_sha256, s.corpus_bytes, s.corpus_path"
                              : ", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL") +
         " FROM sweeps s";
}

// Column indices follow sweep_columns_for's SELECT list; a v1 file reads NULL for 8 onward.
SweepRow read_sweep(const Statement& s) {
  SweepRow r;
  r.id = s.int64(0);
  r.name = s.text(1);
  r.spec_json = s.text(2);
  r.spec_hash = s.text(3);
  r.created_at = s.real(4);
  r.updated_at = s.real(5);
  r.status = parse_sweep_status(s.text(6));
  r.slurm_job_id = s.opt_text(7);
  r.heartbeat_at = s.opt_real(8);
  // An owner is recorded only while a coordinator holds the sweep; no host means no owner.
  if (std::optional<std::string> host = s.opt_text(9)) {
    SweepOwner o;
    o.host = *host;
    o.pid = s.opt_int64(10).value_or(0);
    o.started_at = s.opt_real(11).value_or(0);
    o.slurm_job = s.opt_text(12);
    o.heartbeat = s.opt_real(13);
    r.owner = std::move(o);
  }
  r.corpus_sha256 = s.opt_text(14);
  r.corpus_bytes = s.opt_int64(15);
  r.corpus_path = s.opt_text(16);
  return r;
}

// grid_point and grid_json came with schema v3; an older file (read-only) has neither.
// The subquery gives the latest train step (progress of a running cell) without a second query per cell;
// a done cell without rows of its own may be a link, which reads its original's (row_sources, v12).
// `latest_step` false: NULL in its place (CellFilter::latest_step).
std::string cell_columns_for(int schema_version, bool latest_step) {
  const std::string train = split_literal(MetricSplit::train);
  const std::string latest =
      latest_step ? "coalesce((SELECT max(m.step) FROM metrics m WHERE m.cell_id = c.id AND m.split = " + train +
                        "), CASE WHEN c.status = '" + std::string(to_string(CellStatus::done)) +
                        "' THEN (SELECT max(m.step) FROM " + row_sources_from(schema_version) +
                        " x JOIN metrics m ON m.cell_id = x.rows_cell_id WHERE x.cell_id = c.id AND m.split = " +
                        train + ") END)"
                  : "NULL";
  return "SELECT c.id, c.sweep_id, s.name, c.position, c.key, c.variant, c.seed, c.config_json, c.config_hash, "
         "c.max_steps, c.status, c.attempts, c.failures, c.max_attempts, c.last_error, " +
         measurement_list("c.", ", ", schema_version) + ", c.final_step, " + latest + ", c.updated_at, " +
         (schema_version >= 3 ? "c.grid_point, c.grid_json" : "NULL, NULL") +
         " FROM cells c JOIN sweeps s ON s.id = c.sweep_id";
}

// Column indices follow cell_columns_for; the measurements' count varies, hence k.
CellRow read_cell(const Statement& s) {
  CellRow r;
  r.id = s.int64(0);
  r.sweep_id = s.int64(1);
  r.sweep_name = s.text(2);
  r.position = s.int64(3);
  r.key = s.text(4);
  r.variant = s.text(5);
  r.seed = s.int64(6);
  r.config_json = s.text(7);
  r.config_hash = s.text(8);
  r.max_steps = s.int64(9);
  r.status = parse_cell_status(s.text(10));
  r.attempts = static_cast<int>(s.int64(11));
  r.failures = static_cast<int>(s.int64(12));
  r.max_attempts = static_cast<int>(s.int64(13));
  r.last_error = s.opt_text(14);
  // A value stored as text ('NaN') or a blob is missing, never 0.0; counted.
  int k = 15;
  for (const MeasurementField& f : cell_measurements()) {
    bool mismatch = false;
    r.results.*f.value = s.opt_number(k++, &mismatch);
    r.non_numeric += mismatch;
  }
  r.final_step = s.opt_int64(k);
  r.latest_step = s.opt_int64(k + 1);
  r.updated_at = s.real(k + 2);
  r.grid_point = s.opt_int64(k + 3);
  r.grid_json = s.opt_text(k + 4);
  return r;
}

// source_diff_sha256 came with schema v6, threads and gpu_name with v7; an
// older file (read-only) reads them as absent.
std::string run_columns_for(int schema_version) {
  return std::string(
             "SELECT r.id, r.cell_id, s.name, c.key, c.variant, c.seed, r.attempt, r.status, r.host, r.device, "
             "r.world_size, r.backend, r.torch_version, r.git_commit, r.resumed_from_step, r.started_at, "
             "r.ended_at, r.error, ") +
         (schema_version >= 6 ? "r.source_diff_sha256, " : "NULL, ") +
         (schema_version >= 7 ? "r.threads, r.gpu_name, " : "NULL, NULL, ") +
         (schema_version >= 11 ? "r.numerics_version, r.reused_from" : "NULL, NULL") +
         " FROM runs r JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON s.id = c.sweep_id";
}

// Column indices follow run_columns_for.
RunRow read_run(const Statement& s) {
  RunRow r;
  r.id = s.int64(0);
  r.cell_id = s.int64(1);
  r.sweep_name = s.text(2);
  r.cell_key = s.text(3);
  r.variant = s.text(4);
  r.seed = s.int64(5);
  r.attempt = static_cast<int>(s.int64(6));
  r.status = parse_run_status(s.text(7));
  r.info.host = s.text(8);
  try {
    // An empty device or backend keeps the RunInfo defaults instead of failing to parse.
    const std::string device = s.text(9), backend = s.text(11);
    if (!device.empty()) r.info.device = parse_device_name(device, "");
    if (!backend.empty()) r.info.backend = parse_backend(backend);
  } catch (const Error& e) {
    EGM_THROW(DbError, "runs row {}: {} (the database was changed by hand?)", r.id, e.what());
  }
  r.info.world_size = static_cast<int>(s.opt_int64(10).value_or(1));
  r.info.torch_version = s.text(12);
  r.info.git_commit = s.text(13);
  r.info.resumed_from_step = s.opt_int64(14);
  r.started_at = s.real(15);
  r.ended_at = s.opt_real(16);
  r.error = s.opt_text(17);
  r.info.source_diff_sha256 = s.opt_text(18);
  r.info.threads = s.opt_int64(19);
  r.info.gpu_name = s.opt_text(20);
  r.info.numerics_version = s.opt_int64(21);
  r.reused_from = s.opt_text(22);
  return r;
}

// Empty text is stored as NULL, so "absent" reads back the same whichever way it was written.
std::optional<std::string> non_empty(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

}  // namespace

// ---- statuses ---------------------------------------------------------------------

// Index into the name tables: valid for every enum value (parse_enum only makes known ones).
const char* to_string(SweepStatus s) { return kSweepStatus[static_cast<int>(s)]; }
const char* to_string(CellStatus s) { return kCellStatus[static_cast<int>(s)]; }
const char* to_string(RunStatus s) { return kRunStatus[static_cast<int>(s)]; }
SweepStatus parse_sweep_status(std::string_view n) {
  return parse_enum<SweepStatus, ConfigError>(n, kSweepStatus, "sweep status");
}
CellStatus parse_cell_status(std::string_view n) {
  return parse_enum<CellStatus, ConfigError>(n, kCellStatus, "cell status");
}
RunStatus parse_run_status(std::string_view n) {
  return parse_enum<RunStatus, ConfigError>(n, kRunStatus, "run status");
}

// Quoted for inlining in SQL: the split names are fixed identifiers, never user text.
std::string split_literal(MetricSplit split) { return fmt::format("'{}'", to_string(split)); }

// A measurement newer than the file's schema reads as NULL, so one SELECT serves every version.
std::string measurement_list(std::string_view prefix, std::string_view separator, int schema_version) {
  std::string list;
  for (const MeasurementField& f : cell_measurements()) {
    if (!list.empty()) list += separator;
    list += schema_version >= f.cells_since ? fmt::format("{}{}", prefix, f.name) : "NULL";
  }
  return list;
}

// Relative to the working directory: runs/ beside the specs, unless EGM_DB names another file.
std::string default_db_path() {
  std::string env = env_or("EGM_DB");
  return env.empty() ? "runs/egm.sqlite" : env;
}

// ---- open ---------------------------------------------------------------------------

ResultsDb::ResultsDb(const std::string& path, OpenMode mode) : connection_(path, mode) {
  // A read-only open never migrates or sets pragmas: the file may belong to a live coordinator.
  if (mode == OpenMode::read_only) {
    const int version = connection_.user_version();
    const int expected = results_schema_version();
    // user_version 0 is SQLite's default: a new file, or one egm never wrote.
    EGM_REQUIRE(version != 0, DbError, "{} is empty or not an egm results database", path);
    EGM_REQUIRE(version <= expected, DbError,
                "{} has schema version {}, newer than this egm knows ({}); use a newer egm", path, version,
                expected);
    // An older file is read as it is (the coordinator upgrades it when it next opens it).
    schema_version_ = version;
    // It may have come from elsewhere: its schema must be egm's where egm reads it.
    check_egm_schema(connection_, "main", version, path);
    return;
  }
  // 8 KB pages for a new file (an existing one keeps its own): packed
  // parameter snapshots (1-3 KB each) fill them with less waste than 4 KB
  // pages (-9% of a 5,000-step sweep's file); 16 KB pages were no smaller and
  // made each commit's WAL writes dearer (results/BENCHMARKS.md, issue 16).
  connection_.exec("PRAGMA page_size = 8192");
  // WAL: readers never block the writer and see only committed transactions.
  connection_.exec("PRAGMA journal_mode = WAL");
  // NORMAL in WAL mode: a power cut may lose the last commits but never corrupts the file.
  connection_.exec("PRAGMA synchronous = NORMAL");
  // SQLite leaves foreign keys off per connection unless asked, so each open turns them on.
  connection_.exec("PRAGMA foreign_keys = ON");
  // A writer's page cache of 64 MiB instead of SQLite's 2 MB: the coordinator's
  // inserts land in the B-trees of every running cell at once (1,000 workers:
  // thousands of leaf pages), and with 2 MB it re-read them from the OS and
  // spilled dirty ones to the WAL mid-transaction (results/BENCHMARKS.md, issue 16).
  connection_.exec("PRAGMA cache_size = -65536");
  // Savepoints' sub-journals (each message's writes are one, inside the
  // loop's transaction) in memory, not in a temporary file written page by page.
  connection_.exec("PRAGMA temp_store = MEMORY");
  // Migrations run after the pragmas: page_size only applies to a file before its first table.
  migrate(connection_, results_migrations());
  schema_version_ = connection_.user_version();
  check_egm_schema(connection_, "main", schema_version_, path);
}

ResultsDb::ResultsDb(ResultsDb&&) noexcept = default;
ResultsDb& ResultsDb::operator=(ResultsDb&&) noexcept = default;
ResultsDb::~ResultsDb() = default;

void ResultsDb::set_clock(std::function<double()> clock) { clock_ = std::move(clock); }

// Seconds since the Unix epoch; tests set a clock to make timestamps reproducible.
double ResultsDb::now() const {
  if (clock_) return clock_();
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string ResultsDb::sweep_columns() const { return sweep_columns_for(schema_version_); }
std::string ResultsDb::cell_columns(bool latest_step) const { return cell_columns_for(schema_version_, latest_step); }

// An internal error (EGM_CHECK): a verb that opened read-only must never reach a write.
void ResultsDb::require_writable(const char* what) const {
  EGM_CHECK(!read_only(), "{}: {} was opened read-only", what, path());
}

// ---- sweeps -------------------------------------------------------------------------

std::optional<SweepRow> ResultsDb::find_sweep(const std::string& name) {
  Statement s = connection_.prepare(sweep_columns() + " WHERE s.name = ?");
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return read_sweep(s);
}

SweepRow ResultsDb::sweep(int64_t sweep_id) {
  Statement s = connection_.prepare(sweep_columns() + " WHERE s.id = ?");
  s.bind(1, sweep_id);
  EGM_REQUIRE(s.step(), DbError, "{}: no sweep with id {}", path(), sweep_id);
  return read_sweep(s);
}

std::vector<SweepRow> ResultsDb::list_sweeps(bool include_superseded) {
  Statement s = connection_.prepare(sweep_columns() +
                                    (include_superseded ? "" : " WHERE s.status <> 'superseded'") +
                                    " ORDER BY s.id");
  std::vector<SweepRow> rows;
  while (s.step()) rows.push_back(read_sweep(s));
  return rows;
}

SweepOpenResult ResultsDb::create_or_load_sweep(const std::string& name, const std::string& spec_json,
                                                const std::string& spec_hash, ChangedSpec on_change) {
  require_writable("create_or_load_sweep");
  EGM_REQUIRE(!name.empty(), ConfigError, "a sweep needs a name");
  EGM_REQUIRE(!spec_hash.empty(), ConfigError, "sweep '{}': empty spec hash", name);
  // One transaction: the lookup, any rename and the insert are seen together or not at all.
  Transaction tx(connection_);
  const double t = now();
  SweepOpenResult result;
  if (std::optional<SweepRow> old = find_sweep(name)) {
    // Same spec: resume the stored sweep (--new-sweep still starts a fresh one).
    if (on_change != ChangedSpec::new_sweep && old->spec_hash == spec_hash) {
      // Its status is left to the caller, which sets running once it owns the sweep.
      connection_.execute("UPDATE sweeps SET updated_at = ? WHERE id = ?", t, old->id);
      write_event(
          {old->id, std::nullopt, std::nullopt, EventKind::sweep_loaded, "sweep loaded to resume", t, std::nullopt});
      tx.commit();
      result.sweep = sweep(old->id);
      return result;
    }
    if (on_change == ChangedSpec::refuse) {
      EGM_THROW(ConfigError,
                "sweep '{}' already exists in {} with a different spec (stored spec sha256 {}..., this spec {}...). "
                "Its cells and results belong to the old spec. Either pass --extend (when the new spec only adds "
                "cells: more seeds, variants or grid values; the cells already run are kept), --new-sweep (the old "
                "sweep is kept as '{}@{}' and a new one starts), give this spec another \"name\", or restore the "
                "old spec (egm query \"SELECT spec_json FROM sweeps WHERE name = '{}'\" prints it)",
                name, path(), old->spec_hash.substr(0, 12), spec_hash.substr(0, 12), name, old->id, name);
    }
    if (on_change == ChangedSpec::extend) {
      // The sweep keeps its id, cells and runs; ensure_cells (same
      // transaction, by the caller) refuses a spec that drops or changes one.
      // A finished sweep with new cells is pending again.
      write_event({old->id, std::nullopt, std::nullopt, EventKind::sweep_extended,
                   fmt::format("spec changed with --extend: sha256 {} -> {}; the spec before: {}", old->spec_hash,
                               spec_hash, old->spec_json),
                   t, std::nullopt});
      connection_.execute(
          "UPDATE sweeps SET spec_json = ?, spec_hash = ?, updated_at = ?, "
          "status = CASE WHEN status IN ('done', 'failed') THEN 'pending' ELSE status END WHERE id = ?",
          spec_json, spec_hash, t, old->id);
      tx.commit();
      result.sweep = sweep(old->id);
      result.extended_from = old->spec_hash;
      return result;
    }
    // '@' cannot appear in a spec's name, so the alias never collides with a real sweep.
    const std::string alias = fmt::format("{}@{}", name, old->id);
    connection_.execute("UPDATE sweeps SET name = ?, status = 'superseded', updated_at = ? WHERE id = ?", alias, t,
                        old->id);
    write_event({old->id, std::nullopt, std::nullopt, EventKind::sweep_superseded,
                 fmt::format("renamed '{}' -> '{}': a new sweep replaces it (--new-sweep)", name, alias), t,
                 std::nullopt});
    result.superseded_as = alias;
  }
  connection_.execute(
      "INSERT INTO sweeps (name, spec_json, spec_hash, created_at, updated_at, status) "
      "VALUES (?, ?, ?, ?, ?, 'pending')",
      name, spec_json, spec_hash, t, t);
  // Read before write_event inserts its own row, which would change last_insert_rowid.
  const int64_t id = connection_.last_insert_rowid();
  write_event({id, std::nullopt, std::nullopt, EventKind::sweep_created, fmt::format("sweep '{}' created", name), t,
               std::nullopt});
  tx.commit();
  result.sweep = sweep(id);
  result.created = true;
  return result;
}

void ResultsDb::set_sweep_status(int64_t sweep_id, SweepStatus status) {
  require_writable("set_sweep_status");
  Transaction tx(connection_);
  const double t = now();
  // 'running' comes from a live coordinator: its first heartbeat goes with it.
  const int64_t n = status == SweepStatus::running && schema_version_ >= 2
                        ? connection_.execute("UPDATE sweeps SET status = ?, updated_at = ?, heartbeat_at = ? WHERE id = ?",
                                              to_string(status), t, t, sweep_id)
                        : connection_.execute("UPDATE sweeps SET status = ?, updated_at = ? WHERE id = ?",
                                              to_string(status), t, sweep_id);
  EGM_REQUIRE(n == 1, DbError, "{}: no sweep with id {}", path(), sweep_id);
  tx.commit();
}

// Called every kHeartbeatIntervalS by the live coordinator; stale_since reads it.
void ResultsDb::heartbeat(int64_t sweep_id) {
  require_writable("heartbeat");
  if (schema_version_ < 2) return;  // no heartbeat_at column (the schema this binary embeds predates it)
  Transaction tx(connection_);
  const int64_t n = connection_.execute("UPDATE sweeps SET heartbeat_at = ? WHERE id = ?", now(), sweep_id);
  EGM_REQUIRE(n == 1, DbError, "{}: no sweep with id {}", path(), sweep_id);
  tx.commit();
}

// The owner columns came with schema v9: an older file records no owner.
void ResultsDb::claim_sweep(int64_t sweep_id, const SweepOwner& owner) {
  require_writable("claim_sweep");
  if (schema_version_ < 9) return;
  Transaction tx(connection_);
  const double t = now();
  const int64_t n = connection_.execute(
      "UPDATE sweeps SET owner_host = ?, owner_pid = ?, owner_started_at = ?, owner_slurm_job = ?, "
      "owner_heartbeat = ?, heartbeat_at = ?, updated_at = ? WHERE id = ?",
      owner.host, owner.pid, owner.started_at, owner.slurm_job, t, t, t, sweep_id);
  EGM_REQUIRE(n == 1, DbError, "{}: no sweep with id {}", path(), sweep_id);
  tx.commit();
}

// Returns false once another coordinator has claimed the sweep: the caller must stop writing.
bool ResultsDb::owned_heartbeat(int64_t sweep_id, const SweepOwner& owner) {
  require_writable("owned_heartbeat");
  if (schema_version_ < 9) {
    heartbeat(sweep_id);
    return true;
  }
  Transaction tx(connection_);
  const double t = now();
  // Written only while this coordinator is still the owner: one statement, so
  // a takeover between a check and the write cannot be missed.
  const int64_t n = connection_.execute(
      "UPDATE sweeps SET heartbeat_at = ?, owner_heartbeat = ? WHERE id = ? AND owner_host = ? AND owner_pid = ? AND "
      "owner_started_at = ?",
      t, t, sweep_id, owner.host, owner.pid, owner.started_at);
  tx.commit();
  return n == 1;
}

// Clears the claim only while it is still ours: a coordinator that lost the sweep leaves the new owner's claim.
void ResultsDb::release_sweep(int64_t sweep_id, const SweepOwner& owner) {
  require_writable("release_sweep");
  if (schema_version_ < 9) return;
  Transaction tx(connection_);
  connection_.execute(
      "UPDATE sweeps SET owner_host = NULL, owner_pid = NULL, owner_started_at = NULL, owner_slurm_job = NULL, "
      "owner_heartbeat = NULL WHERE id = ? AND owner_host = ? AND owner_pid = ? AND owner_started_at = ?",
      sweep_id, owner.host, owner.pid, owner.started_at);
  tx.commit();
}

void ResultsDb::set_sweep_corpus(int64_t sweep_id, const SweepCorpus& corpus) {
  require_writable("set_sweep_corpus");
  if (schema_version_ < 9) return;
  Transaction tx(connection_);
  const int64_t n = connection_.execute(
      "UPDATE sweeps SET corpus_sha256 = ?, corpus_bytes = ?, corpus_path = ? WHERE id = ?", corpus.sha256,
      corpus.bytes, corpus.path, sweep_id);
  EGM_REQUIRE(n == 1, DbError, "{}: no sweep with id {}", path(), sweep_id);
  tx.commit();
}

std::string describe_corpus(const SweepRow& sweep) {
  if (!sweep.corpus_sha256) return "not recorded (no coordinator has started the sweep)";
  if (*sweep.corpus_sha256 == "unknown") return "unknown (the sweep ran before egm recorded its corpus)";
  std::string s = "sha256 " + *sweep.corpus_sha256;
  if (sweep.corpus_bytes || sweep.corpus_path) {
    s += " (";
    if (sweep.corpus_bytes) s += fmt::format("{} bytes", *sweep.corpus_bytes);
    if (sweep.corpus_bytes && sweep.corpus_path) s += ", ";
    if (sweep.corpus_path) s += *sweep.corpus_path;
    s += ")";
  }
  return s;
}

// Returns the last heartbeat of a running sweep whose coordinator has been silent for over
// kStaleAfterS (presumably dead); nullopt for a live or a finished sweep.
std::optional<double> stale_since(const SweepRow& sweep, double now) {
  if (sweep.status != SweepStatus::running || !sweep.heartbeat_at) return std::nullopt;
  if (now - *sweep.heartbeat_at <= kStaleAfterS) return std::nullopt;
  return sweep.heartbeat_at;
}

// An empty job id stores NULL (non_empty), clearing a previous one.
void ResultsDb::set_slurm_job_id(int64_t sweep_id, const std::string& job_id) {
  require_writable("set_slurm_job_id");
  Transaction tx(connection_);
  const int64_t n = connection_.execute("UPDATE sweeps SET slurm_job_id = ?, updated_at = ? WHERE id = ?",
                                        non_empty(job_id), now(), sweep_id);
  EGM_REQUIRE(n == 1, DbError, "{}: no sweep with id {}", path(), sweep_id);
  tx.commit();
}

// ---- cells --------------------------------------------------------------------------

std::vector<int64_t> ResultsDb::ensure_cells(int64_t sweep_id, const std::vector<CellInput>& cells) {
  require_writable("ensure_cells");
  Transaction tx(connection_);
  const SweepRow sw = sweep(sweep_id);
  struct Existing {
    int64_t id;
    std::string key, hash;
    int64_t position = 0;
    bool matched = false;
  };
  // Keyed by the cell key ("VARIANT-sSEED", with a grid "VARIANT-sSEED-gN"),
  // unique in a sweep.
  std::map<std::string, Existing> existing;
  {
    Statement s = connection_.prepare("SELECT id, key, config_hash, position FROM cells WHERE sweep_id = ?");
    s.bind(1, sweep_id);
    while (s.step()) existing[s.text(1)] = Existing{s.int64(0), s.text(1), s.text(2), s.int64(3)};
  }
  const double t = now();
  std::vector<int64_t> ids;
  // A spec that expands to the same key twice is a bug in the expansion, not a user error.
  std::set<std::string> seen;
  Statement insert = connection_.prepare(
      "INSERT INTO cells (sweep_id, position, key, variant, seed, config_json, config_hash, max_steps, status, "
      "max_attempts, updated_at, grid_point, grid_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)");
  for (size_t i = 0; i < cells.size(); ++i) {
    const CellInput& c = cells[i];
    EGM_CHECK(seen.insert(c.key).second, "ensure_cells: cell {} appears twice", c.key);
    EGM_CHECK(c.max_attempts >= 1, "ensure_cells: cell {} has max_attempts {}", c.key, c.max_attempts);
    auto it = existing.find(c.key);
    if (it != existing.end()) {
      // The stored results belong to the stored config; silently replacing it would mislabel them.
      if (it->second.hash != c.config_hash)
        EGM_THROW(ConfigError,
                  "sweep '{}': cell {} was created with another run config (sha256 {}..., now {}...); the same spec "
                  "now expands differently (did a preset or default change?). Pass --new-sweep to start a new "
                  "sweep, keeping this one as '{}@{}'",
                  sw.name, c.key, it->second.hash.substr(0, 12), c.config_hash.substr(0, 12), sw.name, sw.id);
      it->second.matched = true;
      ids.push_back(it->second.id);
      // An extended spec (more seeds, variants, grid values) can move a cell
      // in the expansion's order; the order runs are scheduled and listed in.
      if (it->second.position != static_cast<int64_t>(i))
        connection_.execute("UPDATE cells SET position = ? WHERE id = ?", static_cast<int64_t>(i), it->second.id);
      continue;
    }
    // reset() rewinds the statement and clears the previous row's bindings.
    insert.reset();
    insert.bind_all(sweep_id, static_cast<int64_t>(i), c.key, c.variant, c.seed, c.config_json, c.config_hash,
                    c.max_steps, c.max_attempts, t, c.grid_point, c.grid_json);
    insert.run();
    // Returned in the spec's order, one id per input cell.
    ids.push_back(connection_.last_insert_rowid());
  }
  std::vector<std::string> extra;
  for (const auto& [k, e] : existing)
    if (!e.matched) extra.push_back(e.key);
  if (!extra.empty())
    EGM_THROW(ConfigError,
              "sweep '{}' holds {} cell(s) this spec no longer expands to ({}{}); --extend only adds cells. Pass "
              "--new-sweep to start a new sweep, keeping this one as '{}@{}'",
              sw.name, extra.size(), fmt::join(extra.begin(), extra.begin() + std::min<size_t>(extra.size(), 5), ", "),
              extra.size() > 5 ? ", ..." : "", sw.name, sw.id);
  tx.commit();
  return ids;
}

// At a coordinator's start: rows a dead coordinator left 'running' are closed, runs before their cells.
int ResultsDb::recover_interrupted(int64_t sweep_id, const std::string& reason) {
  require_writable("recover_interrupted");
  Transaction tx(connection_);
  const double t = now();
  connection_.execute(
      "UPDATE runs SET status = 'interrupted', ended_at = ?, error = coalesce(error, ?) "
      "WHERE status = 'running' AND cell_id IN (SELECT id FROM cells WHERE sweep_id = ?)",
      t, reason, sweep_id);
  const auto n = static_cast<int>(connection_.execute(
      "UPDATE cells SET status = 'interrupted', updated_at = ? WHERE sweep_id = ? AND status = 'running'", t,
      sweep_id));
  if (n > 0)
    write_event({sweep_id, std::nullopt, std::nullopt, EventKind::recovered,
                 fmt::format("{} cell(s) left running ({}) marked interrupted", n, reason), t, std::nullopt});
  tx.commit();
  return n;
}

std::string cells_to_run_condition(std::string_view alias) {
  return fmt::format("({0}.status IN ('pending', 'interrupted', 'running') OR ({0}.status = 'failed' AND {0}.failures < "
                     "{0}.max_attempts))",
                     alias);
}

// Done cells and failed ones with no attempts left are skipped; the rest come in the spec's order.
std::vector<CellRow> ResultsDb::cells_to_run(int64_t sweep_id) {
  Statement s = connection_.prepare(
      fmt::format("{} WHERE c.sweep_id = ? AND {} ORDER BY c.position", cell_columns(), cells_to_run_condition("c")));
  s.bind(1, sweep_id);
  std::vector<CellRow> rows;
  while (s.step()) rows.push_back(read_cell(s));
  return rows;
}

CellRow ResultsDb::cell(int64_t cell_id) {
  Statement s = connection_.prepare(cell_columns() + " WHERE c.id = ?");
  s.bind(1, cell_id);
  EGM_REQUIRE(s.step(), DbError, "{}: no cell with id {}", path(), cell_id);
  return read_cell(s);
}

// Ordered by sweep, then by the spec's order of cells within it.
std::vector<CellRow> ResultsDb::list_cells(const CellFilter& filter) {
  Where w;
  filter_cells(w, filter, "c.status");
  Statement s = connection_.prepare(cell_columns(filter.latest_step) + w.sql() + " ORDER BY s.id, c.position");
  w.bind(s);
  std::vector<CellRow> rows;
  while (s.step()) rows.push_back(read_cell(s));
  return rows;
}

// ---- attempts -------------------------------------------------------------------------

// The attempt number is the cell's attempts + 1, read and written in one transaction so two starts cannot share it.
int64_t ResultsDb::start_attempt(int64_t cell_id, const RunInfo& info) {
  require_writable("start_attempt");
  Transaction tx(connection_);
  CachedStatement q = connection_.cached("SELECT status, attempts, sweep_id, key FROM cells WHERE id = ?");
  q->bind(1, cell_id);
  EGM_REQUIRE(q->step(), DbError, "{}: no cell with id {}", path(), cell_id);
  const CellStatus status = parse_cell_status(q->text(0));
  const int attempt = static_cast<int>(q->int64(1)) + 1;
  const int64_t sweep_id = q->int64(2);
  const std::string key = q->text(3);
  // A cached statement must be reset before its next use elsewhere; the values were copied out above.
  q->reset();
  EGM_CHECK(status != CellStatus::done, "start_attempt: cell {} ({}) is already done", cell_id, key);
  const double t = now();
  // A cell has at most one running run: an earlier attempt still marked running is closed first.
  connection_.execute(
      "UPDATE runs SET status = 'interrupted', ended_at = ?, error = coalesce(error, ?) "
      "WHERE cell_id = ? AND status = 'running'",
      t, fmt::format("superseded by attempt {}", attempt), cell_id);
  connection_.execute(
      "INSERT INTO runs (cell_id, attempt, status, host, device, world_size, backend, torch_version, git_commit, "
      "started_at, resumed_from_step, source_diff_sha256, threads, gpu_name, numerics_version) "
      "VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      cell_id, attempt, info.host, info.device.str(), info.world_size, to_string(info.backend), info.torch_version,
      info.git_commit, t, info.resumed_from_step, info.source_diff_sha256, info.threads, info.gpu_name,
      info.numerics_version);
  const int64_t run_id = connection_.last_insert_rowid();
  connection_.execute("UPDATE cells SET status = 'running', attempts = ?, updated_at = ? WHERE id = ?", attempt, t,
                      cell_id);
  std::string resumed = info.resumed_from_step ? fmt::format(", resumed from step {}", *info.resumed_from_step) : "";
  write_event({sweep_id, cell_id, run_id, EventKind::attempt_started,
               fmt::format("{} attempt {} on {} {} (world size {}){}", key, attempt, info.host, info.device.str(),
                           info.world_size, resumed),
               t, info.resumed_from_step});
  tx.commit();
  return run_id;
}

// The done path of finish_attempt, with the worker's measurements and final step.
void ResultsDb::finish_done(int64_t run_id, const RunOutcome& outcome) {
  EGM_CHECK(outcome.status == Outcome::done, "finish_done: run {} ended {}, not done", run_id, to_string(outcome.status));
  finish_attempt(run_id, RunStatus::done, "", outcome.measured, {}, outcome.step);
}

// The worker's report of the device it really runs on, which replaces what start_attempt recorded.
void ResultsDb::set_run_setup(int64_t run_id, const DeviceName& device, Backend backend, int world_size) {
  require_writable("set_run_setup");
  Transaction tx(connection_);
  const int64_t changed = connection_.execute("UPDATE runs SET device = ?, backend = ?, world_size = ? WHERE id = ?",
                                              device.str(), to_string(backend), world_size, run_id);
  EGM_REQUIRE(changed == 1, DbError, "{}: no run with id {}", path(), run_id);
  tx.commit();
}

// Diffs are keyed by their sha256: runs from the same dirty tree share one stored copy.
void ResultsDb::store_source_diff(const SourceDiff& d) {
  require_writable("store_source_diff");
  Transaction tx(connection_);
  connection_.execute("INSERT OR IGNORE INTO source_diffs (sha256, size, diff) VALUES (?, ?, ?)", d.sha256, d.size,
                      d.diff);
  tx.commit();
}

// source_diffs came with schema v6.
std::optional<SourceDiff> ResultsDb::source_diff(const std::string& sha256) {
  if (schema_version_ < 6) return std::nullopt;
  CachedStatement s = connection_.cached("SELECT sha256, size, diff FROM source_diffs WHERE sha256 = ?");
  s->bind(1, sha256);
  if (!s->step()) return std::nullopt;
  return SourceDiff{s->text(0), s->int64(1), s->text(2)};
}

// Known only once the worker has read its checkpoint, after the attempt's row was written.
void ResultsDb::set_resumed_from_step(int64_t run_id, int64_t step) {
  require_writable("set_resumed_from_step");
  Transaction tx(connection_);
  const int64_t changed = connection_.execute("UPDATE runs SET resumed_from_step = ? WHERE id = ?", step, run_id);
  EGM_REQUIRE(changed == 1, DbError, "{}: no run with id {}", path(), run_id);
  tx.commit();
}

void ResultsDb::finish_attempt(int64_t run_id, RunStatus status, const std::string& error,
                               const Measurements& results, const FailureInfo& failure,
                               std::optional<int64_t> step) {
  require_writable("finish_attempt");
  EGM_CHECK(status != RunStatus::running, "finish_attempt: status must be done, failed or interrupted");
  Transaction tx(connection_);
  CachedStatement q = connection_.cached(
      "SELECT r.cell_id, r.status, r.attempt, c.sweep_id, c.key FROM runs r JOIN cells c ON c.id = r.cell_id "
      "WHERE r.id = ?");
  q->bind(1, run_id);
  EGM_REQUIRE(q->step(), DbError, "{}: no run with id {}", path(), run_id);
  const int64_t cell_id = q->int64(0);
  const std::string old_status = q->text(1);
  // A run ends once; a second report for it is a bug this check surfaces.
  const bool was_running = parse_run_status(old_status) == RunStatus::running;
  const int64_t attempt = q->int64(2);
  const int64_t sweep_id = q->int64(3);
  const std::string key = q->text(4);
  q->reset();
  EGM_CHECK(was_running, "finish_attempt: run {} ({} attempt {}) already ended as {}", run_id, key,
            attempt, old_status);
  const double t = now();
  connection_.execute("UPDATE runs SET status = ?, ended_at = ?, error = ? WHERE id = ?", to_string(status), t,
                      non_empty(error), run_id);
  std::string message;
  EventKind kind = EventKind::attempt_done;
  switch (status) {
    case RunStatus::done:
      {
        // The measurement columns come from cell_measurements(), so the SET list is built from it in the same order as the binds.
        std::string sets;
        for (const MeasurementField& f : cell_measurements()) sets += fmt::format("{} = ?, ", f.name);
        CachedStatement done = connection_.cached("UPDATE cells SET status = 'done', " + sets +
                                                  "final_step = ?, updated_at = ? WHERE id = ?");
        int k = 0;
        for (const MeasurementField& f : cell_measurements()) done->bind(++k, results.*f.value);
        done->bind(k + 1, step).bind(k + 2, t).bind(k + 3, cell_id);
        done->run();
      }
      message = fmt::format("{} attempt {} done{}", key, attempt,
                            results.final_val ? fmt::format(": final val {:.4f}", *results.final_val) : "");
      break;
    // A retriable failure counts one attempt; the cell runs again while failures < max_attempts.
    case RunStatus::failed:
      // Not retriable: the budget shrinks to what was used, so no later run retries it either.
      connection_.execute(
          "UPDATE cells SET status = 'failed', failures = failures + 1, last_error = ?, updated_at = ?, "
          "max_attempts = CASE WHEN ? THEN max_attempts ELSE failures + 1 END WHERE id = ?",
          non_empty(error), t, failure.retriable, cell_id);
      message = fmt::format("{} attempt {} failed{}: {}", key, attempt, failure.retriable ? "" : " (not retriable)",
                            error);
      if (!failure.detail.empty() && failure.detail != error) message += "\n" + failure.detail;
      kind = EventKind::attempt_failed;
      break;
    // Interrupted is not a failure: the attempt does not count against max_attempts.
    case RunStatus::interrupted:
      connection_.execute("UPDATE cells SET status = 'interrupted', updated_at = ? WHERE id = ?", t, cell_id);
      message = fmt::format("{} attempt {} interrupted{}{}", key, attempt, error.empty() ? "" : ": ", error);
      kind = EventKind::attempt_interrupted;
      break;
    case RunStatus::running: break;
  }
  write_event({sweep_id, cell_id, run_id, kind, message, t, step});
  tx.commit();
}

RunRow ResultsDb::run(int64_t run_id) {
  Statement s = connection_.prepare(run_columns_for(schema_version_) + " WHERE r.id = ?");
  s.bind(1, run_id);
  EGM_REQUIRE(s.step(), DbError, "{}: no run with id {}", path(), run_id);
  return read_run(s);
}

// The filter's statuses select runs here (r.status), not their cells.
std::vector<RunRow> ResultsDb::list_runs(const CellFilter& filter) {
  Where w;
  filter_cells(w, filter, "r.status");
  Statement s =
      connection_.prepare(run_columns_for(schema_version_) + w.sql() + " ORDER BY s.id, c.position, r.attempt");
  w.bind(s);
  std::vector<RunRow> rows;
  while (s.step()) rows.push_back(read_run(s));
  return rows;
}

// ---- worker reports ---------------------------------------------------------------------

// The caller holds the transaction (record_metrics or record_batch).
void ResultsDb::write_metrics(const std::vector<MetricPoint>& points) {
  if (points.empty()) return;
  // An upsert: a resumed attempt re-trains the steps after its checkpoint and overwrites their rows with its own.
  CachedStatement s = connection_.cached(
      "INSERT INTO metrics (cell_id, run_id, step, split, loss, lr, tokens_per_s, time) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cell_id, split, step) DO UPDATE SET "
      "run_id = excluded.run_id, loss = excluded.loss, lr = excluded.lr, tokens_per_s = excluded.tokens_per_s, "
      "time = excluded.time");
  const double t = now();
  for (const auto& p : points) {
    s->reset();
    // A point with no time (0) takes the time of the write.
    s->bind_all(p.cell_id, p.run_id, p.step, to_string(p.split), p.loss, p.lr, p.tokens_per_s, p.time > 0 ? p.time : t);
    s->run();
  }
}

void ResultsDb::write_params(const std::vector<ParamValue>& values) {
  if (values.empty()) return;
  // One packed snapshot per (cell, step) (schema v5, db/param_pack.h). Values
  // for a snapshot that exists already are merged into it, value by value, as
  // the rows of schema v4 were upserted.
  // Pointers into values, which outlives the loop; the map orders snapshots by (cell, step).
  std::map<std::pair<int64_t, int64_t>, std::vector<const ParamValue*>> snapshots;
  for (const auto& v : values) {
    EGM_CHECK(!v.module.empty() && !v.name.empty(), "record_params: cell {} step {}: empty module or name",
              v.cell_id, v.step);
    snapshots[{v.cell_id, v.step}].push_back(&v);
  }
  CachedStatement existing = connection_.cached(
      "SELECT l.layout, s.data FROM param_snapshots s JOIN param_layouts l ON l.id = s.layout_id "
      "WHERE s.cell_id = ? AND s.step = ?");
  CachedStatement find_layout = connection_.cached("SELECT id FROM param_layouts WHERE layout = ?");
  CachedStatement add_layout = connection_.cached("INSERT INTO param_layouts (layout) VALUES (?)");
  CachedStatement put = connection_.cached(
      "INSERT INTO param_snapshots (cell_id, run_id, step, layout_id, data) VALUES (?, ?, ?, ?, ?) "
      "ON CONFLICT (cell_id, step) DO UPDATE SET run_id = excluded.run_id, layout_id = excluded.layout_id, "
      "data = excluded.data");
  for (const auto& [key, group] : snapshots) {
    std::vector<ParamEntry> entries;
    existing->reset();
    existing->bind_all(key.first, key.second);
    if (existing->step()) entries = unpack_params(existing->text(0), existing->blob(1));
    entries.reserve(entries.size() + group.size());
    for (const ParamValue* v : group) entries.push_back({v->module, v->layer, v->idx, v->name, v->value});
    const PackedParams packed = pack_params(std::move(entries));
    // Layouts are stored once each and shared by id: most snapshots of a sweep have the same few.
    int64_t layout_id;
    find_layout->reset();
    find_layout->bind_all(packed.layout);
    if (find_layout->step()) {
      layout_id = find_layout->int64(0);
    } else {
      add_layout->reset();
      add_layout->bind_all(packed.layout);
      add_layout->run();
      layout_id = connection_.last_insert_rowid();
    }
    put->reset();
    // The snapshot is credited to the last run that wrote to it.
    put->bind_all(key.first, group.back()->run_id, key.second, layout_id, Blob{packed.data});
    put->run();
  }
}

// No transaction of its own: callers write the event inside the one that made the change it reports.
int64_t ResultsDb::write_event(const EventInput& e) {
  connection_.execute(
      "INSERT INTO events (time, sweep_id, cell_id, run_id, kind, message, step) VALUES (?, ?, ?, ?, ?, ?, ?)",
      e.time > 0 ? e.time : now(), e.sweep_id, e.cell_id, e.run_id, std::string(to_string(e.kind)), e.message,
      e.step);
  return connection_.last_insert_rowid();
}

void ResultsDb::record_metrics(const std::vector<MetricPoint>& points) {
  require_writable("record_metrics");
  Transaction tx(connection_);
  write_metrics(points);
  tx.commit();
}

void ResultsDb::record_params(const std::vector<ParamValue>& values) {
  require_writable("record_params");
  Transaction tx(connection_);
  write_params(values);
  tx.commit();
}

int64_t ResultsDb::record_event(const EventInput& event) {
  require_writable("record_event");
  Transaction tx(connection_);
  const int64_t id = write_event(event);
  tx.commit();
  return id;
}

void ResultsDb::record_events(const std::vector<EventInput>& events) {
  require_writable("record_events");
  std::optional<Transaction> tx;
  if (!connection_.in_transaction()) tx.emplace(connection_);
  for (const EventInput& e : events) write_event(e);
  if (tx) tx->commit();
}

// One worker message is one transaction: one WAL commit for its metrics, params and events.
void ResultsDb::record_batch(const RecordBatch& batch) {
  require_writable("record_batch");
  Transaction tx(connection_);
  write_metrics(batch.metrics);
  write_params(batch.params);
  for (const auto& e : batch.events) write_event(e);
  tx.commit();
}

// The newest `limit` events, returned oldest first.
std::vector<EventRow> ResultsDb::list_events(std::optional<int64_t> sweep_id, int limit) {
  Statement s = connection_.prepare(
      std::string("SELECT id, time, sweep_id, cell_id, run_id, kind, message, ") +
      (schema_version_ >= 4 ? "step" : "NULL") + " FROM events" +  // step came with schema v4
      (sweep_id ? " WHERE sweep_id = ?" : "") + " ORDER BY id DESC LIMIT ?");
  int i = 0;
  if (sweep_id) s.bind(++i, *sweep_id);
  s.bind(++i, limit);
  std::vector<EventRow> rows;
  while (s.step())
    rows.push_back({s.int64(0), s.real(1), s.opt_int64(2), s.opt_int64(3), s.opt_int64(4), parse_event_kind(s.text(5)),
                    s.text(6), s.opt_int64(7)});
  std::reverse(rows.begin(), rows.end());  // oldest first
  return rows;
}

std::vector<LookRow> ResultsDb::list_looks(int64_t sweep_id) {
  if (schema_version_ < 10) return {};  // looks came with schema v10
  Statement s = connection_.prepare(
      "SELECT look, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, next, time, method, params "
      "FROM looks WHERE sweep_id = ? ORDER BY look, id");
  s.bind(1, sweep_id);
  std::vector<LookRow> rows;
  while (s.step())
    rows.push_back({s.int64(0), s.text(1), s.int64(2), s.opt_real(3), s.opt_real(4), s.opt_real(5), s.opt_real(6),
                    s.text(7), s.int64(8) != 0, s.text(9), s.real(10), s.text(11), s.text(12)});
  return rows;
}

// The rows of the latest look only, one per claim.
std::vector<LookRow> ResultsDb::last_look(int64_t sweep_id) {
  std::vector<LookRow> rows = list_looks(sweep_id);
  if (rows.empty()) return rows;
  const int64_t last = rows.back().look;  // ordered by look
  rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const LookRow& r) { return r.look != last; }), rows.end());
  return rows;
}

// All of a look's rows (one per claim) land together or not at all.
void ResultsDb::record_look(int64_t sweep_id, const std::vector<LookRow>& rows) {
  require_writable("record_look");
  Transaction tx(connection_);
  for (const LookRow& r : rows)
    connection_.execute(
        "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
        "next, method, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        sweep_id, r.look, r.time, r.claim, r.seeds, r.estimate, r.lower, r.upper, r.p_anytime, r.decision,
        static_cast<int64_t>(r.settled ? 1 : 0), r.next, r.method, r.params);
  tx.commit();
}

void ResultsDb::set_look_next(int64_t sweep_id, int64_t look, const std::string& next) {
  require_writable("set_look_next");
  // One statement is atomic on its own (SQLite's autocommit), so no Transaction here.
  connection_.execute("UPDATE looks SET next = ? WHERE sweep_id = ? AND look = ?", next, sweep_id, look);
}

// ---- progress ---------------------------------------------------------------------------

SweepProgress ResultsDb::sweep_progress(int64_t sweep_id) {
  // One snapshot: the counts and the running cells agree with each other.
  // Deferred: a read transaction that never takes the write lock; WAL lets it read while the coordinator writes.
  Transaction snapshot(connection_, Transaction::Kind::deferred);
  SweepProgress p;
  p.sweep = sweep(sweep_id);
  int64_t done_steps = 0;
  {
    Statement s = connection_.prepare(
        // A failed cell with failures >= max_attempts is exhausted: never retried, so its steps leave the work remaining.
        "SELECT status, count(*), sum(max_steps), "
        "sum(CASE WHEN failures >= max_attempts THEN 1 ELSE 0 END), "
        "sum(CASE WHEN failures >= max_attempts THEN max_steps ELSE 0 END) "
        "FROM cells WHERE sweep_id = ? GROUP BY status");
    s.bind(1, sweep_id);
    while (s.step()) {
      const CellStatus status = parse_cell_status(s.text(0));
      const int64_t n = s.int64(1), steps = s.int64(2);
      p.total += n;
      p.steps_total += steps;
      switch (status) {
        case CellStatus::pending: p.pending = n; break;
        case CellStatus::running: p.running = n; break;
        case CellStatus::done: p.done = n; done_steps = steps; break;
        case CellStatus::failed:
          p.failed = n;
          p.exhausted = s.int64(3);
          p.steps_given_up = s.int64(4);
          break;
        case CellStatus::interrupted: p.interrupted = n; break;
      }
    }
  }
  {
    Statement s = connection_.prepare(
        "SELECT c.id, c.key, c.variant, c.seed, c.max_steps, r.id, r.attempt, r.host, r.device, r.started_at, "
        "r.resumed_from_step FROM cells c JOIN runs r ON r.cell_id = c.id AND r.status = 'running' "
        "WHERE c.sweep_id = ? AND c.status = 'running' ORDER BY c.position");
    s.bind(1, sweep_id);
    Statement latest = connection_.prepare(
        "SELECT step, loss FROM metrics WHERE cell_id = ? AND split = " + split_literal(MetricSplit::train) +
        " AND run_id = ? ORDER BY step DESC LIMIT 1");
    // The rate is the current attempt's train steps over its wall time, from its first to its latest metric.
    Statement rate = connection_.prepare(
        "SELECT min(step), max(step), min(time), max(time), count(*) FROM metrics "
        "WHERE cell_id = ? AND split = " + split_literal(MetricSplit::train) + " AND run_id = ?");
    while (s.step()) {
      RunningCell r;
      r.cell_id = s.int64(0);
      r.key = s.text(1);
      r.variant = s.text(2);
      r.seed = s.int64(3);
      r.max_steps = s.int64(4);
      r.run_id = s.int64(5);
      r.attempt = static_cast<int>(s.int64(6));
      r.host = s.text(7);
      r.device = s.text(8);
      r.started_at = s.real(9);
      r.step = s.opt_int64(10);  // until its first metric, the step it resumed from
      latest.reset();
      latest.bind_all(r.cell_id, r.run_id);
      if (latest.step()) {
        r.step = latest.int64(0);
        r.loss = latest.opt_real(1);
      }
      rate.reset();
      rate.bind_all(r.cell_id, r.run_id);
      // One point gives no interval; steps and seconds can still be 0 with two points at the same step or time.
      if (rate.step() && rate.int64(4) >= 2) {
        const double steps = static_cast<double>(rate.int64(1) - rate.int64(0));
        const double seconds = rate.real(3) - rate.real(2);
        if (steps > 0 && seconds > 0) r.steps_per_s = steps / seconds;
      }
      p.steps_done += r.step.value_or(0);
      p.running_cells.push_back(std::move(r));
    }
  }
  // done_steps counts each done cell's max_steps: a done cell ran them all.
  p.steps_done += done_steps;
  // The one ETA formula (util/eta.h): the steps of the cells still to run over
  // the running attempts' summed step rates, else the mean done attempt's time.
  EtaInput eta;
  eta.cells_left = p.total - p.done - p.exhausted;
  eta.steps_left = static_cast<double>(std::max<int64_t>(0, p.steps_total - p.steps_given_up - p.steps_done));
  eta.running = p.running;
  for (const auto& r : p.running_cells) eta.running_steps_per_s.push_back(r.steps_per_s.value_or(0));
  // The mean done attempt's time is the fallback when no running attempt has a rate yet.
  if (eta.cells_left > 0) {
    Statement s = connection_.prepare(
        "SELECT avg(r.ended_at - r.started_at) FROM runs r JOIN cells c ON c.id = r.cell_id "
        "WHERE c.sweep_id = ? AND r.status = 'done'");
    s.bind(1, sweep_id);
    if (s.step() && !s.is_null(0)) eta.mean_attempt_s = s.real(0);
  }
  p.eta_s = sweep_eta(eta);
  return p;
}

// An empty path means EGM_DB or runs/egm.sqlite; read-only, so a live coordinator is never disturbed.
ResultsDb open_for_reading(const std::string& path) {
  return ResultsDb(path.empty() ? default_db_path() : path, OpenMode::read_only);
}

}  // namespace egm::db
