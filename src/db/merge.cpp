// egm merge: every input checked as untrusted, then copied SQLite to SQLite in
// passes (choose the cells, copy them with their rows, order and close each sweep).
#include "db/merge.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "db/event_kind.h"
#include "db/migrations.h"
#include "db/results_db.h"
#include "db/reuse.h"
#include "db/schema_check.h"
#include "db/tables.h"
#include "db/sqlite.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "spec/spec_union.h"
#include "util/error.h"
#include "util/json_limits.h"
#include "util/process_info.h"
#include "util/sha256.h"
#include "util/source_state.h"
#include "util/unix_time.h"

namespace egm::db {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Packed learned parameters (param_snapshots) came with v5; older files would
// need migration 5's repacking first.
constexpr int kOldestInput = 5;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

CheckedInput check_input_database(const std::string& given, const std::string& role) {
  CheckedInput in;
  in.given = given;
  std::error_code ec;
  EGM_REQUIRE(fs::is_regular_file(given, ec), ConfigError, "{} {} does not exist or is not a file; nothing written",
              role, given);
  in.path = fs::absolute(given).lexically_normal().string();
  in.size = static_cast<int64_t>(fs::file_size(given));
  const int newest = results_schema_version();
  try {
    Connection c(given, OpenMode::read_only);
    in.version = c.user_version();
    EGM_REQUIRE(in.version != 0, ConfigError, "{} {} is not an egm results database (no egm schema version); "
                "nothing written", role, given);
    EGM_REQUIRE(in.version <= newest, ConfigError,
                "{} {} has schema version {}, newer than this egm knows ({}): use a newer egm; nothing written",
                role, given, in.version, newest);
    EGM_REQUIRE(in.version >= kOldestInput, ConfigError,
                "{} {} has schema version {}, older than egm merge reads ({}): run the egm that wrote it once "
                "more (any egm sweep on it upgrades it), then merge; nothing written",
                role, given, in.version, kOldestInput);
    // A damaged file is refused before any of it is copied (a b-tree page
    // overwritten, a truncated file): SQLite's own structural check.
    Statement check = c.prepare("PRAGMA quick_check(1)");
    const std::string verdict = check.step() ? check.text(0) : "no answer";
    EGM_REQUIRE(verdict == "ok", ConfigError, "{} {} is damaged (SQLite's quick_check: {}); nothing written", role,
                given, first_line(verdict));
    // Its schema is egm's where merge reads it (no view, virtual table or trigger in its place).
    // ... its values have their columns' types, and its rows name rows that exist.
    try {
      check_egm_schema(c, "main", in.version, role + " " + given);
      check_egm_values(c, in.version, role + " " + given);
      check_egm_references(c, in.version, role + " " + given);
      check_egm_layouts(c, in.version, role + " " + given);
    } catch (const DbError& e) {
      EGM_THROW(ConfigError, "{}; nothing written", first_line(e.what()));
    }
  } catch (const ConfigError&) {
    throw;
  } catch (const DbError& e) {
    // Not SQLite at all, or damaged past opening: SQLite's own reason, on one line.
    std::string why = first_line(e.what());
    if (why.rfind(given + ": ", 0) == 0) why.erase(0, given.size() + 2);  // the file is named once
    const bool damaged = why.find("malformed") != std::string::npos || why.find("corrupt") != std::string::npos;
    // Locked, or waiting for a writer's rollback: a good database; say what it is.
    const bool busy = why.find("locked by another process") != std::string::npos ||
                      why.find("hot journal") != std::string::npos || why.find("write-ahead log") != std::string::npos;
    if (busy) EGM_THROW(ConfigError, "{} {}: {}; nothing written", role, given, why);
    EGM_THROW(ConfigError, "{} {} is {} ({}); nothing written", role, given,
              damaged ? "damaged" : "not an egm results database", why);
  }
  return in;
}

namespace {

// ---- SQL helpers ---------------------------------------------------------------------

std::vector<std::string> table_columns(Connection& c, const std::string& schema, const std::string& table) {
  Statement s = c.prepare(fmt::format("PRAGMA {}.table_info({})", schema, table));
  std::vector<std::string> cols;
  while (s.step()) cols.push_back(s.text(1));
  return cols;
}

bool has_table(Connection& c, const std::string& schema, const std::string& table) {
  Statement s = c.prepare(fmt::format("SELECT 1 FROM {}.sqlite_master WHERE type = 'table' AND name = ?", schema));
  s.bind(1, table);
  return s.step();
}

// INSERT INTO main.table (the output's columns) SELECT ... FROM src: a column
// in `exprs` gets its expression (an empty one leaves the column to its
// default), any other the input's column of that name when it has one (an
// older input lacks the newer columns: they stay NULL).
std::string copy_sql(Connection& c, const std::string& table, const std::string& alias,
                     const std::map<std::string, std::string>& exprs, const std::string& from_where) {
  const std::vector<std::string> src_cols = table_columns(c, "src", table);
  std::vector<std::string> cols, values;
  for (const std::string& col : table_columns(c, "main", table)) {
    if (auto it = exprs.find(col); it != exprs.end()) {
      if (it->second.empty()) continue;
      cols.push_back(col);
      values.push_back(it->second);
    } else if (std::find(src_cols.begin(), src_cols.end(), col) != src_cols.end()) {
      cols.push_back(col);
      values.push_back(alias + "." + col);
    }
  }
  return fmt::format("INSERT INTO main.{} ({}) SELECT {} {}", table, fmt::join(cols, ", "), fmt::join(values, ", "),
                     from_where);
}

int64_t scalar(Connection& c, const std::string& sql) {
  Statement s = c.prepare(sql);
  return s.step() && !s.is_null(0) ? s.int64(0) : 0;
}

// The input attached as schema `src` for the life of this object.
class Attached {
 public:
  Attached(Connection& c, const CheckedInput& in) : c_(c) {
    Statement s = c_.prepare("ATTACH DATABASE ? AS src");
    s.bind(1, read_only_uri(in.path));
    s.run();
    // Read once, front to back: a small page cache is enough.
    c_.exec("PRAGMA src.cache_size = -8192");
  }
  ~Attached() {
    try {
      c_.exec("DETACH DATABASE src");
    } catch (...) {  // already failing; the temporary file goes anyway
    }
  }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  Connection& c_;
};

// The temporary output next to OUT: removed (with its journal files) unless kept.
class TempOutput {
 public:
  explicit TempOutput(std::string path) : path_(std::move(path)) {}
  ~TempOutput() {
    if (kept_) return;
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path_ + suffix, ec);
  }
  TempOutput(const TempOutput&) = delete;
  TempOutput& operator=(const TempOutput&) = delete;
  const std::string& path() const { return path_; }
  void keep() { kept_ = true; }

 private:
  std::string path_;
  bool kept_ = false;
};

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// One merged sweep while it is being built.
struct SweepPlan {
  std::string name;
  json spec;               // the union of the inputs' specs
  std::string spec_json;   // as stored: the first input's text while the specs agree
  std::string spec_hash;
  double created_at = 0;
  std::vector<std::optional<int64_t>> src_id;  // per input: its sweep id there
  std::map<std::string, std::pair<std::string, std::string>> corpus;  // column -> (value, input)
  int64_t out_id = 0;
  MergedSweep summary;
  std::string from;  // the first input that holds it (messages)
};

// The union spec in spec's types (spec/experiment_spec.h's tolerant reader).
spec::ExperimentSpec read_union_spec(const SweepPlan& p) {
  try {
    return spec::read_stored_spec_json(p.spec);
  } catch (const ConfigError& e) {
    EGM_THROW(ConfigError, "sweep '{}': {}; nothing written", p.name, e.what());
  }
}

// SQL: cells `a` and `b` have the same results (every measurement and the
// final step; NULL is the same as NULL); `b` from a file at `b_version`,
// whose missing measurement columns are NULL.
std::string same_results(const std::string& a, const std::string& b,
                         int b_version = std::numeric_limits<int>::max()) {
  std::string sql;
  for (const MeasurementField& f : cell_measurements())
    sql += b_version >= f.cells_since ? fmt::format("{0}.{2} IS {1}.{2} AND ", a, b, f.name)
                                      : fmt::format("{0}.{1} IS NULL AND ", a, f.name);
  return sql + fmt::format("{0}.final_step IS {1}.final_step", a, b);
}

std::string show(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : "none"; }

// A status as an SQL literal ("'done'"): the words are results_db.h's, never restated here.
template <typename Status>
std::string lit(Status status) {
  return fmt::format("'{}'", to_string(status));
}
const std::string kDone = lit(CellStatus::done);

// ---- before anything is written -------------------------------------------------------

// Every input opened and checked; the index of --prefer's input (-1: none).
std::vector<CheckedInput> check_inputs(const MergeOptions& o, int& prefer) {
  std::error_code ec;
  EGM_REQUIRE(o.force || !fs::exists(fs::symlink_status(o.out, ec)), ConfigError,
              "{} exists; pass --force to replace it (nothing written)", o.out);
  const fs::path out_dir = fs::absolute(o.out).parent_path();
  EGM_REQUIRE(fs::is_directory(out_dir, ec), ConfigError, "folder {} does not exist; nothing written",
              out_dir.string());
  std::vector<CheckedInput> inputs;
  for (const std::string& given : o.inputs) {
    CheckedInput in = check_input_database(given, "input");
    for (const CheckedInput& other : inputs)
      EGM_REQUIRE(!fs::equivalent(other.path, in.path, ec), ConfigError,
                  "input {} is given twice ({} and {}); nothing written", in.path, other.given, given);
    EGM_REQUIRE(!fs::exists(o.out, ec) || !fs::equivalent(o.out, in.path, ec), ConfigError,
                "the output {} is also an input; write the merge to a new file (nothing written)", o.out);
    inputs.push_back(std::move(in));
  }
  prefer = -1;
  if (!o.prefer.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (o.prefer == inputs[i].given || (fs::exists(o.prefer, ec) && fs::equivalent(o.prefer, inputs[i].path, ec)))
        prefer = static_cast<int>(i);
    EGM_REQUIRE(prefer >= 0, ConfigError, "--prefer {} is not one of the inputs ({}); nothing written", o.prefer,
                fmt::join(o.inputs, ", "));
  }
  return inputs;
}

// The new output: egm's schema, no journal and no syncs while it is built (a
// failure deletes it; nobody reads it before it is renamed into place).
void prepare_output(Connection& out) {
  out.exec("PRAGMA page_size = 8192");  // as ResultsDb makes a new file
  out.exec("PRAGMA journal_mode = OFF");
  out.exec("PRAGMA synchronous = OFF");
  out.exec("PRAGMA foreign_keys = ON");
  out.exec("PRAGMA cache_size = -65536");
  migrate(out, results_migrations());
  // Each statement commits on its own (cheap without a journal): an
  // attached input can be detached only outside a transaction.
}

// ---- pass 1: sweeps, specs and the choice of each cell (cells only) -----------------------

// A chosen cell whose run another input's chosen cell trained too, with one
// identity (issue 38; a cell of another sweep or key: one merged cell is
// chosen once): pass 2b makes its run a link to the kept one.
struct Twin {
  size_t input = 0;          // the cell to link: its input and id there
  int64_t src_cell = 0;
  size_t kept_input = 0;     // the run kept: its input, cell and run there
  int64_t kept_cell = 0;
  int64_t kept_run = 0;
  std::string kept_sweep, kept_key, kept_host;
  bool preferred = false;    // different results, decided by --prefer
};

// What pass 1 decides: the merged sweeps, in the order they are first seen,
// the cells done in two inputs with different results, and the twins.
struct Choices {
  std::vector<SweepPlan> plans;
  std::map<std::string, size_t> plan_of;
  int64_t conflicts = 0;
  std::vector<std::string> conflict_examples;
  std::vector<Twin> twins;
  int64_t twin_conflicts = 0;  // twins with different results and no --prefer to decide
  std::vector<std::string> twin_examples;
};

// A sweep of input `i` (read from src.sweeps) joined to its plan: a new plan,
// or the union of its spec with the plan's; its corpus checked against the plan's.
size_t join_sweep(Statement& sweeps, const std::map<std::string, int>& col, const std::vector<CheckedInput>& inputs,
                  size_t i, Choices& ch) {
  const CheckedInput& in = inputs[i];
  const std::string name = sweeps.text(col.at("name"));
  const std::string spec_json = sweeps.text(col.at("spec_json"));
  json spec;
  try {  // the spec reader's own limits: a spec egm itself would refuse is not merged
    spec = parse_json(spec_json, JsonLimits::user(), "sweeps.spec_json");
  } catch (const JsonError& e) {
    EGM_THROW(ConfigError, "input {}: sweep '{}' has a spec egm cannot read ({}); nothing written", in.given, name,
              first_line(e.what()));
  }
  EGM_REQUIRE(spec.is_object(), ConfigError,
              "input {}: sweep '{}' has a spec that is not a JSON object; nothing written", in.given, name);
  auto [it, added] = ch.plan_of.emplace(name, ch.plans.size());
  if (added) {
    SweepPlan p;
    p.name = name;
    p.spec = std::move(spec);
    p.spec_json = spec_json;
    p.spec_hash = sweeps.text(col.at("spec_hash"));
    p.created_at = sweeps.real(col.at("created_at"));
    p.src_id.resize(inputs.size());
    p.summary.name = name;
    p.summary.cells_from.resize(inputs.size());
    p.from = in.given;
    ch.plans.push_back(std::move(p));
  } else {
    SweepPlan& p = ch.plans[it->second];
    if (sweeps.text(col.at("spec_hash")) != p.spec_hash || p.summary.spec_widened) {
      if (auto bad = spec::union_specs(p.spec, spec))
        EGM_THROW(ConfigError,
                  "sweep '{}': the spec in {} differs from the one in {} at {}; egm merge combines sweeps of one "
                  "spec (they may differ only in seeds and variants); nothing written",
                  name, in.given, p.from, *bad);
      p.summary.spec_widened =
          p.summary.spec_widened || p.spec.dump() != parse_json(p.spec_json, JsonLimits::user(), "spec").dump();
    }
    p.created_at = std::min(p.created_at, sweeps.real(col.at("created_at")));
  }
  SweepPlan& p = ch.plans[it->second];
  p.src_id[i] = sweeps.int64(col.at("id"));
  // The corpus a sweep trained on, where the input records it (schema
  // v9's corpus_sha256; 'unknown' for a sweep that ran before): one
  // sweep, one corpus. Its path may differ between clusters; its bytes may not.
  for (const auto& [c, k] : col) {
    if (c != "corpus_sha256" || sweeps.is_null(k)) continue;
    const std::string v = sweeps.text(k);
    if (v == "unknown") continue;
    auto [seen, fresh] = p.corpus.emplace(c, std::make_pair(v, in.given));
    EGM_REQUIRE(fresh || seen->second.first == v, ConfigError,
                "sweep '{}': {} records {} = {}, {} records {}; sweeps on different corpora are not merged; "
                "nothing written",
                name, seen->second.second, c, seen->second.first, in.given, v);
  }
  return it->second;
}

// The cells of sweep `src_sweep` of input `i` against the choices so far:
// another run config is refused, different results counted as conflicts
// (unless one side is preferred), and each cell's choice updated.
void choose_cells(Connection& out, SweepPlan& p, int64_t src_sweep, const std::vector<CheckedInput>& inputs, size_t i,
                  int prefer, Choices& ch) {
  const CheckedInput& in = inputs[i];
  const std::string join =
      "FROM src.cells c JOIN temp.choice ch ON ch.sweep = ?1 AND ch.key = c.key WHERE c.sweep_id = ?2";
  {
    Statement s = out.prepare("SELECT c.key, ch.src, ch.config_hash, c.config_hash " + join +
                              " AND ch.config_hash <> c.config_hash LIMIT 1");
    s.bind_all(p.name, src_sweep);
    if (s.step())
      EGM_THROW(ConfigError,
                "sweep '{}': cell {} has another run config in {} (sha256 {}...) than in {} ({}...): these are "
                "not sweeps of one spec (did a preset or default change between the egm builds?); nothing "
                "written",
                p.name, s.text(0), in.given, s.text(3).substr(0, 12), inputs[s.int64(1)].given,
                s.text(2).substr(0, 12));
  }
  {
    Statement s = out.prepare(
        fmt::format("SELECT c.key, ch.src, ch.final_val, c.final_val {} AND c.status = {} AND ch.done AND NOT ({})",
                    join, kDone, same_results("ch", "c", in.version)));
    s.bind_all(p.name, src_sweep);
    while (s.step()) {
      const auto other = static_cast<int>(s.int64(1));
      if (prefer == static_cast<int>(i) || prefer == other) {
        ++p.summary.preferred;
        continue;
      }
      if (++ch.conflicts <= 3)
        ch.conflict_examples.push_back(fmt::format("{} {}: {} in {}, {} in {}", p.name, s.text(0), show(s.opt_real(2)),
                                                   inputs[other].given, show(s.opt_real(3)), in.given));
    }
  }
  {
    Statement s = out.prepare(fmt::format("SELECT count(*) {} AND c.status = {} AND ch.done AND ({})", join, kDone,
                                          same_results("ch", "c", in.version)));
    s.bind_all(p.name, src_sweep);
    s.step();
    p.summary.kept_once += s.int64(0);
  }
  // Taken: a cell not seen yet; a done cell over one that is not; a
  // done cell with other results when this input is preferred.
  std::string sets;
  for (const MeasurementField& f : cell_measurements()) sets += fmt::format("{0} = excluded.{0}, ", f.name);
  Statement up = out.prepare(fmt::format(
      "INSERT INTO temp.choice (sweep, key, src, src_cell, config_hash, done, {}, final_step) "
      "SELECT ?1, c.key, ?3, c.id, c.config_hash, c.status = {}, {}, c.final_step FROM src.cells c "
      "WHERE c.sweep_id = ?2 "
      "ON CONFLICT (sweep, key) DO UPDATE SET src = excluded.src, src_cell = excluded.src_cell, "
      "done = excluded.done, {}final_step = excluded.final_step "
      "WHERE excluded.done AND (NOT choice.done OR (?4 AND NOT ({})))",
      measurement_list(), kDone, measurement_list("c.", ", ", in.version), sets, same_results("choice", "excluded")));
  up.bind_all(p.name, src_sweep, static_cast<int64_t>(i), static_cast<int64_t>(prefer == static_cast<int>(i)));
  up.run();
}

// A chosen cell trained in its input (its last done run, not itself a link),
// with the identity of that run (run/identity.h).
struct Trained {
  size_t input = 0;
  std::string sweep, key, host;
  int64_t cell = 0, run = 0;  // ids in the input
  RunIdentity identity;
  std::vector<std::optional<double>> results;  // cell_measurements(), then the final step
};

// The chosen cells of input `i` (attached as src) that it trained with a
// known identity; none before schema v11 (no numerics version recorded).
std::vector<Trained> trained_cells(Connection& out, const CheckedInput& in, size_t i) {
  std::vector<Trained> cells;
  if (in.version < 11) return cells;
  const size_t n = cell_measurements().size();
  Statement s = out.prepare(fmt::format(
      "SELECT ch.sweep, ch.key, r.host, c.id, r.id, c.config_hash, sw.corpus_sha256, r.device, r.world_size, "
      "r.numerics_version, {}, c.final_step FROM temp.choice ch JOIN src.cells c ON c.id = ch.src_cell "
      "JOIN src.sweeps sw ON sw.id = c.sweep_id JOIN src.runs r ON r.id = "
      "(SELECT max(id) FROM src.runs WHERE cell_id = c.id AND status = {}) "
      "WHERE ch.src = ? AND ch.done AND r.reused_from IS NULL AND r.numerics_version IS NOT NULL",
      measurement_list("c.", ", ", in.version), lit(RunStatus::done)));
  s.bind(1, static_cast<int64_t>(i));
  while (s.step()) {
    Trained t;
    t.input = i;
    t.sweep = s.text(0);
    t.key = s.text(1);
    t.host = s.opt_text(2).value_or("?");
    t.cell = s.int64(3);
    t.run = s.int64(4);
    t.identity = {s.text(5), s.opt_text(6).value_or(""), device_kind_of(s.opt_text(7).value_or("")),
                  s.opt_int64(8).value_or(1), s.opt_int64(9).value_or(0)};
    for (size_t k = 0; k <= n; ++k) t.results.push_back(s.opt_real(static_cast<int>(10 + k)));
    if (t.identity.known()) cells.push_back(std::move(t));
  }
  return cells;
}

// Pass 1b (issue 38): the chosen cells that two inputs trained with one
// identity. In each such group one run is kept (--prefer's input's, else the
// first input's) and the other inputs' cells become twins, linked to it in
// pass 2b: with the same results (as one identity on one numerics version
// gives) always, with different ones only under --prefer; otherwise a
// conflict. A cell trained twice within one input stays as it is.
void find_twins(Connection& out, const std::vector<CheckedInput>& inputs, int prefer, Choices& ch) {
  std::map<std::string, std::vector<Trained>> by_identity;  // in input order
  for (size_t i = 0; i < inputs.size(); ++i) {
    Attached attached(out, inputs[i]);
    for (Trained& t : trained_cells(out, inputs[i], i)) {
      const RunIdentity& id = t.identity;
      by_identity[fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", id.config_hash, id.corpus_sha256, id.device_kind,
                              id.world_size, id.numerics_version)]
          .push_back(std::move(t));
    }
  }
  for (const auto& entry : by_identity) {
    const std::vector<Trained>& group = entry.second;
    size_t kept_input = group.front().input;
    for (const Trained& t : group)
      if (static_cast<int>(t.input) == prefer) kept_input = t.input;
    const Trained& kept =
        *std::find_if(group.begin(), group.end(), [&](const Trained& t) { return t.input == kept_input; });
    for (const Trained& t : group) {
      if (t.input == kept_input) continue;
      const bool same = t.results == kept.results;
      if (!same && prefer != static_cast<int>(kept_input)) {
        if (++ch.twin_conflicts <= 3)
          ch.twin_examples.push_back(fmt::format("{} {} in {}, {} {} in {}: {}", kept.sweep, kept.key,
                                                 inputs[kept.input].given, t.sweep, t.key, inputs[t.input].given,
                                                 kept.identity.str()));
        continue;
      }
      ch.twins.push_back(
          Twin{t.input, t.cell, kept.input, kept.cell, kept.run, kept.sweep, kept.key, kept.host, !same});
    }
  }
}

// Pass 1 over every input: the merged sweeps and, in temp.choice, the input
// each cell is taken from. Every refusal comes from here, before a row is copied.
Choices choose(Connection& out, const std::vector<CheckedInput>& inputs, int prefer, MergeSummary& summary) {
  out.exec(fmt::format(
      "CREATE TEMP TABLE choice (sweep TEXT NOT NULL, key TEXT NOT NULL, src INTEGER NOT NULL, "
      "src_cell INTEGER NOT NULL, config_hash TEXT NOT NULL, done INTEGER NOT NULL, {} REAL, final_step INTEGER, "
      "PRIMARY KEY (sweep, key)) WITHOUT ROWID",
      measurement_list("", " REAL, ")));
  Choices ch;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const CheckedInput& in = inputs[i];
    Attached attached(out, in);
    Statement sweeps = out.prepare("SELECT * FROM src.sweeps ORDER BY id");
    std::map<std::string, int> col;
    for (int k = 0; k < sweeps.column_count(); ++k) col[sweeps.column_name(k)] = k;
    std::vector<std::pair<size_t, int64_t>> mine;  // (plan, sweep id in the input)
    while (sweeps.step()) {
      if (sweeps.text(col.at("status")) == to_string(SweepStatus::superseded)) {
        summary.notes.push_back(
            fmt::format("left out superseded sweep {} of {}", sweeps.text(col.at("name")), in.given));
        continue;
      }
      const size_t plan = join_sweep(sweeps, col, inputs, i, ch);
      mine.emplace_back(plan, sweeps.int64(col.at("id")));
    }
    for (const auto& [pi, src_sweep] : mine) choose_cells(out, ch.plans[pi], src_sweep, inputs, i, prefer, ch);
  }
  EGM_REQUIRE(ch.conflicts == 0, ConfigError,
              "conflict: {} cell(s) done in two inputs with different results ({}{}); pass --prefer INPUT to take "
              "that input's results; nothing written",
              ch.conflicts, fmt::join(ch.conflict_examples, "; "), ch.conflicts > 3 ? "; ..." : "");
  find_twins(out, inputs, prefer, ch);
  EGM_REQUIRE(ch.twin_conflicts == 0, ConfigError,
              "conflict: {} run(s) of one identity trained in two inputs with different results ({}{}); pass "
              "--prefer INPUT to keep that input's run and link the other input's cell to it; nothing written",
              ch.twin_conflicts, fmt::join(ch.twin_examples, "; "), ch.twin_conflicts > 3 ? "; ..." : "");
  EGM_REQUIRE(!ch.plans.empty(), ConfigError, "the inputs hold no sweep to merge; nothing written");
  return ch;
}

// ---- pass 2: the merged sweeps, then each input's chosen cells with all of their rows ----

// The merged sweeps' rows (status pending until pass 3).
void write_sweeps(Connection& out, std::vector<SweepPlan>& plans, double now) {
  for (SweepPlan& p : plans) {
    if (p.summary.spec_widened) {
      p.spec_json = p.spec.dump(2);  // as the coordinator stores a spec; its hash as parse_spec computes it
      p.spec_hash = sha256_hex(p.spec.dump());
      // egm's readers take a spec of at most JsonLimits::user().max_bytes: a union past it could never be read back.
      EGM_REQUIRE(p.spec_json.size() <= JsonLimits::user().max_bytes, ConfigError,
                  "sweep '{}': the merged spec would be {} bytes, more than egm reads ({}); merge fewer seeds or "
                  "variants; nothing written",
                  p.name, p.spec_json.size(), JsonLimits::user().max_bytes);
    }
    out.execute(
        "INSERT INTO sweeps (name, spec_json, spec_hash, created_at, updated_at, status) VALUES (?, ?, ?, ?, ?, ?)",
        p.name, p.spec_json, p.spec_hash, p.created_at, now, to_string(SweepStatus::pending));
    p.out_id = out.last_insert_rowid();
  }
}

// The input's row of merge_sources (and, when it was a merge itself, its
// own rows behind it); returns the new row's id.
int64_t record_source(Connection& out, const CheckedInput& in, double now) {
  out.execute(
      "INSERT INTO merge_sources (path, size, schema_version, host, egm_commit, merged_at) VALUES (?, ?, ?, ?, ?, ?)",
      in.path, in.size, static_cast<int64_t>(in.version), process_info().host, std::string(source_state().commit),
      now);
  const int64_t source = out.last_insert_rowid();
  if (has_table(out, "src", "merge_sources"))
    out.exec(fmt::format(
        "INSERT INTO main.merge_sources (id, path, size, schema_version, host, egm_commit, merged_at, via) "
        "SELECT id + {0}, path, size, schema_version, host, egm_commit, merged_at, coalesce(via + {0}, {0}) "
        "FROM src.merge_sources ORDER BY id",
        source));
  return source;
}

// The corpus sweep `p` trained on (schema v9): sha256, bytes and path of the
// first input that knows it ('unknown' only when none does).
void copy_corpus(Connection& out, const SweepPlan& p, int64_t src_id) {
  const std::vector<std::string> src_cols = table_columns(out, "src", "sweeps");
  std::vector<std::string> corpus_cols;
  for (const std::string& c : table_columns(out, "main", "sweeps"))
    if (c.rfind("corpus_", 0) == 0 && std::find(src_cols.begin(), src_cols.end(), c) != src_cols.end())
      corpus_cols.push_back(c);
  if (std::find(corpus_cols.begin(), corpus_cols.end(), "corpus_sha256") == corpus_cols.end()) return;
  std::string sets;
  for (const std::string& c : corpus_cols)
    sets += fmt::format("{0}{1} = (SELECT {1} FROM src.sweeps WHERE id = ?1)", sets.empty() ? "" : ", ", c);
  out.execute("UPDATE main.sweeps SET " + sets +
                  " WHERE id = ?2 AND (corpus_sha256 IS NULL OR corpus_sha256 = 'unknown') AND "
                  "(SELECT corpus_sha256 FROM src.sweeps WHERE id = ?1) IS NOT NULL",
              src_id, p.out_id);
}

// The done links (l) of the picked cells whose original (o) is not picked.
constexpr const char* kLinksLeftBehind =
    "l.status = 'done' AND l.cell_id IN (SELECT src_cell FROM temp.picked) "
    "AND o.cell_id NOT IN (SELECT src_cell FROM temp.picked)";

// Everything of the picked cells (temp.picked) but the cells themselves, table
// by table as db/tables.h lists them (runs, source diffs, metrics, learned
// parameters, events, looks); ids shifted by the offsets. A table listed there
// that merge has no copy for is an Error (tests/db/test_merge.cpp), never left out.
void copy_cell_rows(Connection& out, int64_t source, int64_t cell_off, int64_t run_off, MergeSummary& summary) {
  // Reuse came with v11 (runs.reused_run); an older input has no links.
  const std::vector<std::string> src_run_cols = table_columns(out, "src", "runs");
  const bool has_reuse = std::find(src_run_cols.begin(), src_run_cols.end(), "reused_run") != src_run_cols.end();
  const std::map<std::string, std::function<void()>> copies{
      {"runs",
       [&] {
         // What ran each cell (host, commit, source diff, compute), the input named.
         const std::string merge_source =
             std::find(src_run_cols.begin(), src_run_cols.end(), "merge_source") != src_run_cols.end()
                 ? fmt::format("coalesce(r.merge_source + {0}, {0})", source)
                 : std::to_string(source);
         out.exec(copy_sql(out, "runs", "r",
                           {{"id", fmt::format("r.id + {}", run_off)},
                            {"cell_id", fmt::format("r.cell_id + {}", cell_off)},
                            {"status", fmt::format("CASE r.status WHEN {} THEN {} ELSE r.status END",
                                                   lit(RunStatus::running), lit(RunStatus::interrupted))},
                            {"error", fmt::format("CASE r.status WHEN {} THEN coalesce(r.error, 'still running in "
                                                  "the input egm merge read') ELSE r.error END",
                                                  lit(RunStatus::running))},
                            {"merge_source", merge_source},
                            // A reused cell's link keeps naming its original when the original comes along
                            // (shifted as the runs are); otherwise reused_from alone says where it came from.
                            {"reused_run", has_reuse ? fmt::format("CASE WHEN r.reused_run IN (SELECT o.id FROM src.runs o "
                                                             "WHERE o.cell_id IN (SELECT src_cell FROM temp.picked)) "
                                                             "THEN r.reused_run + {} END",
                                                             run_off)
                                               : std::string()}},
                           "FROM src.runs r WHERE r.cell_id IN (SELECT src_cell FROM temp.picked) ORDER BY r.id"));
         summary.runs += out.changes();
       }},
      {"source_diffs",
       [&] {
         out.exec("INSERT OR IGNORE INTO main.source_diffs (sha256, size, diff) SELECT sha256, size, diff "
                  "FROM src.source_diffs");
       }},
      {"metrics",
       [&] {
         out.exec(copy_sql(out, "metrics", "m",
                           {{"cell_id", fmt::format("m.cell_id + {}", cell_off)},
                            {"run_id", fmt::format("m.run_id + {}", run_off)}},
                           "FROM src.metrics m WHERE m.cell_id IN (SELECT src_cell FROM temp.picked)"));
         summary.metrics += out.changes();
         // A link reads its original's rows (row_sources, v12): one whose original does not come
         // along takes a copy (its reused_run is NULL here); one that holds copies (before v12) keeps them.
         if (has_reuse) {
           out.exec(fmt::format("INSERT OR IGNORE INTO main.metrics (cell_id, run_id, step, split, loss, lr, "
                                "tokens_per_s, time) SELECT l.cell_id + {}, l.id + {}, m.step, m.split, m.loss, m.lr, "
                                "m.tokens_per_s, m.time FROM src.runs l JOIN src.runs o ON o.id = l.reused_run "
                                "JOIN src.metrics m ON m.cell_id = o.cell_id WHERE {}",
                                cell_off, run_off, kLinksLeftBehind));
           summary.metrics += out.changes();
         }
       }},
      {"param_layouts",
       [&] {
         out.exec("INSERT OR IGNORE INTO main.param_layouts (layout) SELECT layout FROM src.param_layouts ORDER BY id");
       }},
      {"param_snapshots",
       [&] {
         out.exec(fmt::format(
             "INSERT INTO main.param_snapshots (cell_id, run_id, step, layout_id, data) "
             "SELECT s.cell_id + {}, s.run_id + {}, s.step, ml.id, s.data FROM src.param_snapshots s "
             "JOIN src.param_layouts sl ON sl.id = s.layout_id JOIN main.param_layouts ml ON ml.layout = sl.layout "
             "WHERE s.cell_id IN (SELECT src_cell FROM temp.picked) ORDER BY s.id",
             cell_off, run_off));
         if (has_reuse)
           out.exec(fmt::format(
               "INSERT OR IGNORE INTO main.param_snapshots (cell_id, run_id, step, layout_id, data) "
               "SELECT l.cell_id + {}, l.id + {}, s.step, ml.id, s.data FROM src.runs l JOIN src.runs o "
               "ON o.id = l.reused_run JOIN src.param_snapshots s ON s.cell_id = o.cell_id "
               "JOIN src.param_layouts sl ON sl.id = s.layout_id JOIN main.param_layouts ml ON ml.layout = sl.layout "
               "WHERE {} ORDER BY s.id",
               cell_off, run_off, kLinksLeftBehind));
       }},
      {"events",
       [&] {
         // The log of each merged sweep: its own events, and its chosen cells'.
         out.exec(fmt::format(
             "INSERT INTO main.events (time, sweep_id, cell_id, run_id, kind, message, step) "
             "SELECT e.time, (SELECT out_id FROM temp.sweep_map WHERE src_id = e.sweep_id), "
             "CASE WHEN e.cell_id IS NOT NULL THEN e.cell_id + {0} END, "
             "CASE WHEN e.run_id IS NOT NULL AND e.cell_id IS NOT NULL THEN e.run_id + {1} END, e.kind, e.message, "
             "e.step FROM src.events e WHERE e.sweep_id IN (SELECT src_id FROM temp.sweep_map) "
             "AND (e.cell_id IS NULL OR e.cell_id IN (SELECT src_cell FROM temp.picked)) ORDER BY e.id",
             cell_off, run_off));
       }},
      {"looks",
       [&] {
         // A sequential sweep's looks (schema v10), as this input recorded them.
         out.exec(copy_sql(
             out, "looks", "l",
             {{"id", ""}, {"sweep_id", "(SELECT out_id FROM temp.sweep_map WHERE src_id = l.sweep_id)"}},
             "FROM src.looks l WHERE l.sweep_id IN (SELECT src_id FROM temp.sweep_map) ORDER BY l.id"));
       }},
  };
  for (const StoredTable& t : stored_tables()) {
    if (t.merge != MergeRole::cell_rows && t.merge != MergeRole::shared) continue;
    const auto copy = copies.find(t.name);
    EGM_CHECK(copy != copies.end(), "egm merge has no copy for table {} (db/tables.h)", t.name);
    if (has_table(out, "src", t.name)) copy->second();  // an older input lacks the newer tables
  }
}

// Input `i`'s chosen cells, with all of their rows, into the merged sweeps;
// returns the offsets its cell and run ids were shifted by.
std::pair<int64_t, int64_t> copy_input(Connection& out, const CheckedInput& in, size_t i,
                                       std::vector<SweepPlan>& plans, double now, MergeSummary& summary) {
  Attached attached(out, in);
  const int64_t source = record_source(out, in, now);
  out.exec("DELETE FROM temp.picked; DELETE FROM temp.sweep_map");
  {
    Statement s = out.prepare("INSERT INTO temp.picked (src_cell) SELECT src_cell FROM temp.choice WHERE src = ?");
    s.bind(1, static_cast<int64_t>(i));
    s.run();
  }
  const int64_t cell_off = scalar(out, "SELECT max(id) FROM main.cells");
  const int64_t run_off = scalar(out, "SELECT max(id) FROM main.runs");
  for (SweepPlan& p : plans) {
    if (!p.src_id[i]) continue;
    out.execute("INSERT INTO temp.sweep_map (src_id, out_id) VALUES (?, ?)", *p.src_id[i], p.out_id);
    copy_corpus(out, p, *p.src_id[i]);
    Statement s = out.prepare(copy_sql(
        out, "cells", "c",
        {{"id", fmt::format("c.id + {}", cell_off)},
         {"sweep_id", std::to_string(p.out_id)},
         {"status", fmt::format("CASE c.status WHEN {} THEN {} ELSE c.status END", lit(CellStatus::running),
                                lit(CellStatus::interrupted))}},
        "FROM src.cells c WHERE c.sweep_id = ? AND c.id IN (SELECT src_cell FROM temp.picked)"));
    s.bind(1, *p.src_id[i]);
    s.run();
    p.summary.cells_from[i] = out.changes();
    p.summary.cells += out.changes();
  }
  copy_cell_rows(out, source, cell_off, run_off, summary);
  return {cell_off, run_off};
}

// ---- pass 2b: a run two inputs trained with one identity, kept once ---------------------

// Each twin's run made a link to the kept run (relink_run, db/reuse.h), with
// its run_reused event, counted in its merged sweep's summary. `offsets`: each
// input's (cell, run) id shifts.
void link_twins(Connection& out, const Choices& ch, const std::vector<std::pair<int64_t, int64_t>>& offsets,
                const std::vector<CheckedInput>& inputs, std::vector<SweepPlan>& plans, double now) {
  for (const Twin& t : ch.twins) {
    const int64_t cell = t.src_cell + offsets[t.input].first;
    const int64_t kept_cell = t.kept_cell + offsets[t.kept_input].first;
    const int64_t kept_run = t.kept_run + offsets[t.kept_input].second;
    Statement s = out.prepare(fmt::format(
        "SELECT c.key, c.sweep_id, (SELECT max(id) FROM runs WHERE cell_id = c.id AND status = {}) FROM cells c "
        "WHERE c.id = ?",
        lit(RunStatus::done)));
    s.bind(1, cell);
    EGM_CHECK(s.step() && !s.is_null(2), "egm merge: cell {} has no done run to link", cell);
    const std::string key = s.text(0), from = trained_run_text(kept_run, t.kept_sweep, t.kept_key, t.kept_host);
    const int64_t sweep = s.int64(1), run = s.int64(2);
    relink_run(out, cell, run, kept_cell, kept_run, from);
    out.execute("INSERT INTO events (time, sweep_id, cell_id, run_id, kind, message) VALUES (?, ?, ?, ?, ?, ?)", now,
                sweep, cell, run, to_string(EventKind::run_reused),
                fmt::format("{} reused {} (egm merge: {} and {} both trained it with one identity{}; kept once)", key,
                            from, inputs[t.input].path, inputs[t.kept_input].path,
                            t.preferred ? ", with different results: --prefer's run kept" : ""));
    for (SweepPlan& p : plans)
      if (p.out_id == sweep) ++(t.preferred ? p.summary.linked_preferred : p.summary.linked);
  }
}

// ---- pass 3: each merged sweep's cell order, status and event ----------------------------

// Cells in the union spec's order: the expansion's (spec/expand.h), grid
// points, then variants, then seeds.
void order_cells(Connection& out, const SweepPlan& p) {
  const spec::CellOrder order(read_union_spec(p));
  std::vector<std::pair<int64_t, int64_t>> moves;  // cell id -> position
  {
    Statement cells = out.prepare(
        "SELECT id, coalesce(grid_point, 0), variant, seed FROM main.cells WHERE sweep_id = ? ORDER BY id");
    cells.bind(1, p.out_id);
    while (cells.step())
      if (auto at = order.position(cells.int64(1), cells.text(2), static_cast<uint64_t>(cells.int64(3))))
        moves.emplace_back(cells.int64(0), *at);
  }
  for (const auto& [id, at] : moves) out.execute("UPDATE main.cells SET position = ? WHERE id = ?", at, id);
}

// The sweep's status from its cells, and its sweep_merged event.
void finish_sweep(Connection& out, SweepPlan& p, const std::vector<CheckedInput>& inputs, int prefer, double now) {
  // done when every cell is; else resumable (interrupted) while a cell can still run.
  using C = CellStatus;
  out.execute(fmt::format("UPDATE main.sweeps SET status = CASE "
                          "WHEN NOT EXISTS (SELECT 1 FROM cells WHERE sweep_id = ?1 AND status <> {}) THEN {} "
                          "WHEN EXISTS (SELECT 1 FROM cells WHERE sweep_id = ?1 AND status IN ({}, {}, {})) "
                          "THEN {} ELSE {} END WHERE id = ?1",
                          kDone, lit(SweepStatus::done), lit(C::pending), lit(C::running), lit(C::interrupted),
                          lit(SweepStatus::interrupted), lit(SweepStatus::failed)),
              p.out_id);
  p.summary.done =
      scalar(out, fmt::format("SELECT count(*) FROM main.cells WHERE sweep_id = {} AND status = {}", p.out_id, kDone));
  std::vector<std::string> parts;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (p.src_id[i]) parts.push_back(fmt::format("{} ({} cells)", inputs[i].path, p.summary.cells_from[i]));
  std::string message = fmt::format("egm merge: {} cells from {}", p.summary.cells, fmt::join(parts, ", "));
  if (p.summary.kept_once > 0)
    message += fmt::format("; {} done in several inputs with the same results, kept once", p.summary.kept_once);
  if (p.summary.preferred > 0)
    message += fmt::format("; {} with different results taken from {} (--prefer)", p.summary.preferred,
                           inputs[prefer].path);
  if (p.summary.linked + p.summary.linked_preferred > 0) message += "; " + twins_text(p.summary);
  if (p.summary.spec_widened) message += "; the spec lists the inputs' seeds and variants together";
  out.execute("INSERT INTO events (time, sweep_id, kind, message) VALUES (?, ?, ?, ?)", now, p.out_id,
              to_string(EventKind::sweep_merged), message);
}

}  // namespace

std::string twins_text(const MergedSweep& w) {
  std::vector<std::string> parts;
  if (w.linked > 0)
    parts.push_back(fmt::format("{} cell{} trained in another input too, with one identity and the same results: "
                                "linked to that run, counted once",
                                w.linked, w.linked == 1 ? "" : "s"));
  if (w.linked_preferred > 0)
    parts.push_back(fmt::format("{} cell{} trained in another input too, with one identity but other results: linked "
                                "to the --prefer input's run",
                                w.linked_preferred, w.linked_preferred == 1 ? "" : "s"));
  return fmt::format("{}", fmt::join(parts, "; "));
}

MergeSummary merge_databases(const MergeOptions& o, const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  EGM_REQUIRE(!o.inputs.empty(), ConfigError, "egm merge needs at least one input database");
  int prefer = -1;
  const std::vector<CheckedInput> inputs = check_inputs(o, prefer);
  // ATTACH of a read-only file: URI filenames (?mode=ro) must be on; Debian's
  // SQLite enables them at compile time, and without them the URI would name
  // a new file.
  EGM_CHECK(sqlite3_compileoption_used("USE_URI") == 1,
            "this SQLite was built without URI filenames, which egm merge needs to attach its inputs read-only");

  TempOutput tmp(fmt::format("{}.merging-{}", fs::absolute(o.out).lexically_normal().string(), ::getpid()));
  MergeSummary summary;
  {
    Connection out(tmp.path(), OpenMode::read_write_create);
    prepare_output(out);
    Choices ch = choose(out, inputs, prefer, summary);
    std::vector<SweepPlan>& plans = ch.plans;
    // Progress only from here: a refusal above is its one line.
    say(fmt::format("checked {} input(s): {} sweep(s), no conflict", inputs.size(), plans.size()));

    const double now = unix_now();
    write_sweeps(out, plans, now);
    out.exec("CREATE TEMP TABLE picked (src_cell INTEGER PRIMARY KEY)");
    out.exec("CREATE TEMP TABLE sweep_map (src_id INTEGER PRIMARY KEY, out_id INTEGER NOT NULL)");
    std::vector<std::pair<int64_t, int64_t>> offsets;  // per input: its cell and run id shifts
    for (size_t i = 0; i < inputs.size(); ++i) {
      offsets.push_back(copy_input(out, inputs[i], i, plans, now, summary));
      say(fmt::format("copied {}: {} runs so far, {} metric rows", inputs[i].given, summary.runs, summary.metrics));
    }
    link_twins(out, ch, offsets, inputs, plans, now);

    for (SweepPlan& p : plans) {
      order_cells(out, p);
      finish_sweep(out, p, inputs, prefer, now);
      summary.sweeps.push_back(p.summary);
    }
    out.exec("PRAGMA journal_mode = WAL");  // an ordinary egm database from here on
  }
  fsync_path(tmp.path());
  std::error_code ec;
  if (o.force)
    for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(o.out + suffix, ec);  // not the new file's
  fs::rename(tmp.path(), o.out);
  tmp.keep();
  fsync_path(fs::absolute(o.out).parent_path().string());
  return summary;
}

}  // namespace egm::db
