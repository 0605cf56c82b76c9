// Reuse of finished runs: finding a cell's match by identity, writing the
// link (runs row, results, metrics, parameter snapshots, event), and reading
// the links back for the verbs that show them.
#include "db/reuse.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <unordered_map>

#include "db/tables.h"
#include "util/error.h"
#include "util/process_info.h"
#include "util/source_state.h"
#include "util/unix_time.h"

namespace egm::db {
namespace {

// A finished run that might stand for a cell, as the file holds it.
struct Candidate {
  int64_t run_id = 0;
  int64_t cell_id = 0;
  RunIdentity identity;
  std::string sweep;
  std::string key;
  std::string host;
  std::optional<int64_t> reused_run;      // set: it is itself a link
  std::optional<std::string> reused_from;
};

// Finished runs of finished cells with this config, trained ones first.
std::vector<Candidate> candidates(Connection& c, const std::string& config_hash, int64_t except_cell) {
  CachedStatement s = c.cached(
      "SELECT r.id, r.cell_id, r.device, r.world_size, r.numerics_version, s.corpus_sha256, s.name, c.key, r.host, "
      "r.reused_run, r.reused_from "
      "FROM cells c JOIN runs r ON r.cell_id = c.id JOIN sweeps s ON s.id = c.sweep_id "
      "WHERE c.config_hash = ?1 AND c.status = 'done' AND r.status = 'done' AND c.id != ?2 "
      "AND r.numerics_version IS NOT NULL "
      "ORDER BY r.reused_from IS NOT NULL, r.id");
  s->bind(1, config_hash);
  s->bind(2, except_cell);
  std::vector<Candidate> out;
  while (s->step()) {
    Candidate k;
    k.run_id = s->int64(0);
    k.cell_id = s->int64(1);
    k.identity.config_hash = config_hash;
    k.identity.device_kind = device_kind_of(s->opt_text(2).value_or(""));
    k.identity.world_size = s->opt_int64(3).value_or(1);
    k.identity.numerics_version = s->opt_int64(4).value_or(0);
    k.identity.corpus_sha256 = s->opt_text(5).value_or("");
    k.sweep = s->text(6);
    k.key = s->text(7);
    k.host = s->opt_text(8).value_or("?");
    k.reused_run = s->opt_int64(9);
    k.reused_from = s->opt_text(10);
    out.push_back(std::move(k));
  }
  return out;
}

// The transaction the links are written in: their own, or none when the
// caller holds one (the launch opens the sweep and links its cells in one),
// which makes them all or nothing already. Not a savepoint there: one held
// open over every link of a large sweep makes SQLite's in-memory sub-journal
// grow with each page the links touch, and every statement's end walks it
// from its start (quadratic: 100,000 links took 534 s; results/BENCHMARKS.md).
void begin_unless_in_one(std::optional<Transaction>& tx, Connection& c) {
  if (!c.in_transaction()) tx.emplace(c);
}

// What a link to `from` says it came from (runs.reused_from): a link's link
// names the original.
std::string link_text(const Candidate& from) {
  return from.reused_from ? *from.reused_from : trained_run_text(from.run_id, from.sweep, from.key, from.host);
}

// The finished run of `c` that `cell` would take, as `launch` trains it: the
// first candidate of the same identity (trained ones first); none when the
// identity is not known or nothing matches. `except_cell`: the cell itself.
std::optional<Candidate> match(Connection& c, const CellRow& cell, const ReuseLaunch& launch, int64_t except_cell) {
  const RunIdentity wanted = wanted_identity(cell, launch);
  if (!wanted.known()) return std::nullopt;
  for (Candidate& k : candidates(c, cell.config_hash, except_cell))
    if (same_run(k.identity, wanted)) return std::move(k);
  return std::nullopt;
}

// The run a link to `from` names as its original: what `from` names when it
// is itself a link (none: not in this file any more), else `from` itself.
std::optional<int64_t> original_of(const Candidate& from) {
  return from.reused_from ? from.reused_run : std::optional<int64_t>(from.run_id);
}

// A cell to run and the finished run it takes.
struct PlannedLink {
  int64_t cell_id = 0;
  std::string key;
  int attempts = 0;  // the cell's attempts so far
  Candidate from;
};

// For each cell of the sweep that is to run, in spec order, the first finished
// run elsewhere in the file that it may take (candidates()'s order: trained
// ones first): one query for every cell's lookup, not one per cell (100,000
// lookups took 1.5 s one by one here; results/BENCHMARKS.md).
std::vector<PlannedLink> plan_links(Connection& c, int64_t sweep_id, const ReuseLaunch& launch) {
  // INDEXED BY: without statistics the planner may walk the sweep's cells for
  // each cell to run instead (quadratic: minutes at 100,000 cells).
  Statement s = c.prepare(fmt::format(
      "SELECT w.id, w.key, w.variant, w.attempts, w.config_hash, r.id, r.cell_id, r.device, r.world_size, "
      "r.numerics_version, s.corpus_sha256, s.name, c.key, r.host, r.reused_run, r.reused_from "
      "FROM cells w JOIN cells c INDEXED BY cells_by_config_hash ON c.config_hash = w.config_hash AND c.id != w.id "
      "JOIN runs r ON r.cell_id = c.id JOIN sweeps s ON s.id = c.sweep_id "
      "WHERE w.sweep_id = ?1 AND {} AND c.status = 'done' AND r.status = 'done' AND r.numerics_version IS NOT NULL "
      "ORDER BY w.position, r.reused_from IS NOT NULL, r.id",
      cells_to_run_condition("w")));
  s.bind(1, sweep_id);
  std::vector<PlannedLink> plan;
  std::unordered_map<std::string, std::string> kinds;  // device text -> kind, parsed once per text
  int64_t last = -1;  // the cell whose candidates are being read
  bool found = false;
  RunIdentity wanted;
  while (s.step()) {
    const int64_t cell = s.int64(0);
    if (cell != last) {
      last = cell;
      found = false;
      wanted = wanted_identity(s.text(4), s.text(2), launch);
    }
    if (found || !wanted.known()) continue;
    Candidate k;
    k.identity.config_hash = wanted.config_hash;
    const std::string device = s.opt_text(7).value_or("");
    auto kind = kinds.find(device);
    if (kind == kinds.end()) kind = kinds.emplace(device, device_kind_of(device)).first;
    k.identity.device_kind = kind->second;
    k.identity.world_size = s.opt_int64(8).value_or(1);
    k.identity.numerics_version = s.opt_int64(9).value_or(0);
    k.identity.corpus_sha256 = s.opt_text(10).value_or("");
    if (!same_run(k.identity, wanted)) continue;
    k.run_id = s.int64(5);
    k.cell_id = s.int64(6);
    k.sweep = s.text(11);
    k.key = s.text(12);
    k.host = s.opt_text(13).value_or("?");
    k.reused_run = s.opt_int64(14);
    k.reused_from = s.opt_text(15);
    plan.push_back({cell, s.text(1), static_cast<int>(s.int64(3)), std::move(k)});
    found = true;
  }
  return plan;
}

// Writes the links of `plan` (in spec order), each cell taking the run its
// candidate stands for, a statement for all of them at each step rather than
// a statement per cell at each (100,000 links took 6 s one by one here;
// results/BENCHMARKS.md). What a link writes: an attempt of the cell still
// marked running is closed, a runs row with what ran the original (no wall
// time of its own), the original's results and final step on the cell, rows
// copied in when the original is not in this file, and an event.
std::vector<ReuseLink> write_links(ResultsDb& db, int64_t sweep_id, const std::vector<PlannedLink>& plan, double t) {
  std::vector<ReuseLink> links;
  if (plan.empty()) return links;
  Connection& c = db.connection();
  // The plan as a table (the connection's own, in memory), so each step is one statement over it.
  c.exec("CREATE TEMP TABLE IF NOT EXISTS reuse_plan (cell_id INTEGER PRIMARY KEY, position INTEGER NOT NULL, "
         "from_run INTEGER NOT NULL, from_cell INTEGER NOT NULL, attempt INTEGER NOT NULL, attempted INTEGER NOT NULL, "
         "original INTEGER, link_text TEXT NOT NULL)");
  c.exec("DELETE FROM reuse_plan");
  bool any_attempted = false, any_copied = false;
  std::vector<std::string> texts;  // each link's runs.reused_from, in plan order
  texts.reserve(plan.size());
  {
    Statement insert = c.prepare("INSERT INTO reuse_plan VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < plan.size(); ++i) {
      const PlannedLink& cell = plan[i];
      const Candidate& from = cell.from;
      const std::optional<int64_t> original = original_of(from);
      // A cell never attempted (most, at a launch) has no runs row to close and no rows to drop.
      const bool attempted = cell.attempts > 0;
      any_attempted = any_attempted || attempted;
      any_copied = any_copied || !original;
      insert.reset();
      insert.bind_all(cell.cell_id, static_cast<int64_t>(i), from.run_id, from.cell_id, int64_t{cell.attempts + 1},
                      int64_t{attempted}, original, texts.emplace_back(link_text(from)));
      insert.step();
    }
  }
  if (any_attempted)
    c.execute("UPDATE runs SET status = 'interrupted', ended_at = ?1, "
              "error = coalesce(error, 'superseded by attempt ' || p.attempt || ', a reused run') "
              "FROM reuse_plan p WHERE runs.cell_id = p.cell_id AND p.attempted AND runs.status = 'running'",
              t);
  // What ran the original, so the mixed-device and mixed-commit warnings and the run listings see it.
  c.execute("INSERT INTO runs (cell_id, attempt, status, host, device, world_size, backend, torch_version, git_commit, "
            "started_at, ended_at, source_diff_sha256, threads, gpu_name, numerics_version, reused_run, reused_from) "
            "SELECT p.cell_id, p.attempt, 'done', r.host, r.device, r.world_size, r.backend, r.torch_version, "
            "r.git_commit, ?1, ?1, r.source_diff_sha256, r.threads, r.gpu_name, r.numerics_version, p.original, "
            "p.link_text FROM reuse_plan p JOIN runs r ON r.id = p.from_run ORDER BY p.position",
            t);
  // The cell reads as the original. A subquery per cell, not UPDATE ... FROM: 0.7 s against 1.1 s at 100,000.
  c.execute(fmt::format("UPDATE cells SET ({0}, final_step, status, attempts, updated_at) = (SELECT {1}, "
                        "o.final_step, 'done', p.attempt, ?1 FROM reuse_plan p JOIN cells o ON o.id = p.from_cell "
                        "WHERE p.cell_id = cells.id) WHERE cells.id IN (SELECT cell_id FROM reuse_plan)",
                        measurement_list(), measurement_list("o.")),
            t);
  if (any_attempted) {
    c.exec("DELETE FROM metrics WHERE cell_id IN (SELECT cell_id FROM reuse_plan WHERE attempted)");
    c.exec("DELETE FROM param_snapshots WHERE cell_id IN (SELECT cell_id FROM reuse_plan WHERE attempted)");
  }
  // An original in this file is read through (row_sources); a link to one that
  // is not (from --reuse-from, or merged without it) holds the rows, copied in turn.
  if (any_copied) {
    c.exec("INSERT INTO metrics (cell_id, run_id, step, split, loss, lr, tokens_per_s, time) "
           "SELECT p.cell_id, n.id, m.step, m.split, m.loss, m.lr, m.tokens_per_s, m.time FROM reuse_plan p "
           "JOIN runs n ON n.cell_id = p.cell_id AND n.attempt = p.attempt JOIN metrics m ON m.cell_id = p.from_cell "
           "WHERE p.original IS NULL");
    c.exec("INSERT INTO param_snapshots (cell_id, run_id, step, layout_id, data) "
           "SELECT p.cell_id, n.id, s.step, s.layout_id, s.data FROM reuse_plan p "
           "JOIN runs n ON n.cell_id = p.cell_id AND n.attempt = p.attempt JOIN param_snapshots s "
           "ON s.cell_id = p.from_cell WHERE p.original IS NULL ORDER BY p.position, s.step");
  }
  // The links' runs rows, in plan order, for their events and the caller.
  std::vector<EventInput> events;
  events.reserve(plan.size());
  {
    Statement s = c.prepare(
        "SELECT n.id FROM reuse_plan p JOIN runs n ON n.cell_id = p.cell_id AND n.attempt = p.attempt "
        "ORDER BY p.position");
    for (size_t i = 0; i < plan.size(); ++i) {
      const PlannedLink& p = plan[i];
      EGM_CHECK(s.step(), "write_links: a link's runs row is missing");
      const int64_t run_id = s.int64(0);
      const std::string& text = texts[i];
      events.push_back({sweep_id, p.cell_id, run_id, EventKind::run_reused,
                        fmt::format("{} reused {} ({})", p.key, text, p.from.identity.str()), t, std::nullopt});
      links.push_back(ReuseLink{p.cell_id, p.key, run_id, original_of(p.from).value_or(0), text});
    }
  }
  db.record_events(events);
  c.exec("DELETE FROM reuse_plan");
  return links;
}

}  // namespace

std::string trained_run_text(int64_t run, const std::string& sweep, const std::string& key, const std::string& host) {
  return fmt::format("run {} of sweep '{}', cell {}, trained on {}", run, sweep, key, host);
}

void relink_run(Connection& c, int64_t cell, int64_t run, int64_t original_cell, int64_t original,
                const std::string& from) {
  c.execute("UPDATE runs SET (host, device, world_size, backend, torch_version, git_commit, source_diff_sha256, "
            "threads, gpu_name, numerics_version) = (SELECT host, device, world_size, backend, torch_version, "
            "git_commit, source_diff_sha256, threads, gpu_name, numerics_version FROM runs WHERE id = ?1), "
            "started_at = ended_at, resumed_from_step = NULL, reused_run = ?1, reused_from = ?2 WHERE id = ?3",
            original, from, run);
  c.execute("UPDATE runs SET reused_run = ? WHERE reused_run = ?", original, run);
  // The cell reads as the original: its results, and its rows read through
  // row_sources; whatever its own attempt recorded goes.
  c.execute(fmt::format("UPDATE cells SET ({0}, final_step) = (SELECT {0}, final_step FROM cells WHERE id = ?1) "
                        "WHERE id = ?2",
                        measurement_list()),
            original_cell, cell);
  c.execute("DELETE FROM metrics WHERE cell_id = ?", cell);
  c.execute("DELETE FROM param_snapshots WHERE cell_id = ?", cell);
}

RunIdentity wanted_identity(const CellRow& cell, const ReuseLaunch& launch) {
  return wanted_identity(cell.config_hash, cell.variant, launch);
}

RunIdentity wanted_identity(const std::string& config_hash, const std::string& variant, const ReuseLaunch& launch) {
  RunIdentity id;
  id.config_hash = config_hash;
  id.corpus_sha256 = launch.corpus_sha256;
  id.device_kind = launch.device_kind;
  id.world_size = launch.world_size ? launch.world_size(variant) : 1;
  id.numerics_version = launch.numerics_version;
  return id;
}

std::vector<ReuseLink> link_reusable_cells(ResultsDb& db, int64_t sweep_id, const ReuseLaunch& launch) {
  EGM_CHECK(!db.read_only(), "link_reusable_cells needs a writable database");
  std::vector<ReuseLink> links;
  if (db.schema_version() < 11) return links;
  std::optional<Transaction> tx;
  begin_unless_in_one(tx, db.connection());
  const std::vector<PlannedLink> plan = plan_links(db.connection(), sweep_id, launch);
  links = write_links(db, sweep_id, plan, unix_now());
  if (tx) tx->commit();
  return links;
}

std::vector<ReusedCell> reused_cells(ResultsDb& db, int64_t sweep_id) {
  std::vector<ReusedCell> out;
  if (db.schema_version() < 11) return out;
  Statement s = db.connection().prepare(
      "SELECT c.id, c.key, c.variant, r.reused_from, r.reused_run, o.ended_at - o.started_at, o.device, "
      "o.world_size, o.threads, o.gpu_name, os.name "
      "FROM cells c JOIN runs r ON r.cell_id = c.id "
      "LEFT JOIN runs o ON o.id = r.reused_run LEFT JOIN cells oc ON oc.id = o.cell_id "
      "LEFT JOIN sweeps os ON os.id = oc.sweep_id "
      "WHERE c.sweep_id = ?1 AND c.status = 'done' AND r.status = 'done' AND r.reused_from IS NOT NULL "
      "ORDER BY c.position");
  s.bind(1, sweep_id);
  while (s.step()) {
    ReusedCell r;
    r.cell_id = s.int64(0);
    r.key = s.text(1);
    r.variant = s.text(2);
    r.from = s.text(3);
    r.original_run = s.opt_int64(4);
    r.original_seconds = s.opt_real(5);
    r.original_device = s.opt_text(6).value_or("");
    r.original_world_size = s.opt_int64(7).value_or(1);
    r.original_threads = s.opt_int64(8);
    r.original_gpu_name = s.opt_text(9);
    r.original_sweep = s.opt_text(10);
    out.push_back(std::move(r));
  }
  return out;
}

std::string reuse_line(const std::vector<ReusedCell>& reused, int64_t total_cells) {
  if (reused.empty()) return "";
  std::vector<std::pair<std::string, int>> by_sweep;
  for (const ReusedCell& r : reused) {
    const std::string name = r.original_sweep ? fmt::format("sweep '{}'", *r.original_sweep) : "a run no longer here";
    auto it = std::find_if(by_sweep.begin(), by_sweep.end(), [&](const auto& p) { return p.first == name; });
    if (it == by_sweep.end())
      by_sweep.emplace_back(name, 1);
    else
      ++it->second;
  }
  std::string parts;
  for (const auto& [name, n] : by_sweep) parts += fmt::format("{}{}: {}", parts.empty() ? "" : ", ", name, n);
  return fmt::format("{} of {} cells reused from earlier runs ({})", reused.size(), total_cells, parts);
}

}  // namespace egm::db

// ---- --reuse-from ------------------------------------------------------------------

namespace egm::db {
namespace {

// The merge_sources row of `input` in this file, written once per opening.
int64_t source_row(Connection& c, const CheckedInput& input, double t) {
  c.execute("INSERT INTO merge_sources (path, size, schema_version, host, egm_commit, merged_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            input.path, input.size, static_cast<int64_t>(input.version), process_info().host,
            std::string(source_state().commit), t);
  return c.last_insert_rowid();
}

// Copies run `from` (of `other`) in as the link of `cell`.
ReuseLink copy_link(ResultsDb& db, Connection& other, const CellRow& cell, const Candidate& from,
                    const CheckedInput& input, int64_t source, double t) {
  Connection& c = db.connection();
  const std::string text = fmt::format("{} in {}", link_text(from), input.path);
  const int attempt = cell.attempts + 1;
  c.execute("UPDATE runs SET status = 'interrupted', ended_at = ?, error = coalesce(error, ?) "
            "WHERE cell_id = ? AND status = 'running'",
            t, fmt::format("superseded by attempt {}, a reused run", attempt), cell.id);
  Statement r = other.prepare(
      "SELECT host, device, world_size, backend, torch_version, git_commit, source_diff_sha256, threads, gpu_name, "
      "numerics_version FROM runs WHERE id = ?");
  r.bind(1, from.run_id);
  EGM_REQUIRE(r.step(), DbError, "{}: run {} is gone", input.given, from.run_id);
  c.execute("INSERT INTO runs (cell_id, attempt, status, host, device, world_size, backend, torch_version, git_commit, "
            "started_at, ended_at, source_diff_sha256, threads, gpu_name, numerics_version, merge_source, "
            "reused_from) VALUES (?, ?, 'done', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            cell.id, attempt, r.opt_text(0), r.opt_text(1), r.opt_int64(2), r.opt_text(3), r.opt_text(4),
            r.opt_text(5), t, t, r.opt_text(6), r.opt_int64(7), r.opt_text(8), r.opt_int64(9), source, text);
  const int64_t run_id = c.last_insert_rowid();
  if (const std::optional<std::string> sha = r.opt_text(6)) {
    Statement d = other.prepare("SELECT size, diff FROM source_diffs WHERE sha256 = ?");
    d.bind(1, *sha);
    if (d.step())
      c.execute("INSERT OR IGNORE INTO source_diffs (sha256, size, diff) VALUES (?, ?, ?)", *sha, d.int64(0),
                d.text(1));
  }
  // The measurements by the one list (an older input lacks the newer columns: NULL), then final_step.
  const int measured = static_cast<int>(cell_measurements().size());
  Statement o = other.prepare(fmt::format("SELECT {}, final_step FROM cells WHERE id = ?",
                                          measurement_list("", ", ", input.version)));
  o.bind(1, from.cell_id);
  EGM_REQUIRE(o.step(), DbError, "{}: cell {} is gone", input.given, from.cell_id);
  Statement u = c.prepare(fmt::format("UPDATE cells SET status = 'done', {} = ?, final_step = ?, attempts = ?, "
                                      "updated_at = ? WHERE id = ?",
                                      measurement_list("", " = ?, ")));
  for (int i = 0; i < measured; ++i) u.bind(i + 1, o.opt_real(i));
  u.bind(measured + 1, o.opt_int64(measured));
  u.bind(measured + 2, int64_t{attempt});
  u.bind(measured + 3, t);
  u.bind(measured + 4, cell.id);
  u.run();
  c.execute("DELETE FROM metrics WHERE cell_id = ?", cell.id);
  // The input's rows of that cell, read through its own links (row_sources: a v12 link holds none).
  const std::string sources = row_sources_from(input.version);
  Statement m = other.prepare("SELECT m.step, m.split, m.loss, m.lr, m.tokens_per_s, m.time FROM " + sources +
                              " x JOIN metrics m ON m.cell_id = x.rows_cell_id WHERE x.cell_id = ?");
  m.bind(1, from.cell_id);
  while (m.step())
    c.execute("INSERT INTO metrics (cell_id, run_id, step, split, loss, lr, tokens_per_s, time) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
              cell.id, run_id, m.int64(0), m.text(1), m.opt_real(2), m.opt_real(3), m.opt_real(4), m.real(5));
  c.execute("DELETE FROM param_snapshots WHERE cell_id = ?", cell.id);
  Statement p = other.prepare(
      "SELECT s.step, l.layout, s.data FROM " + sources +
      " x JOIN param_snapshots s ON s.cell_id = x.rows_cell_id JOIN param_layouts l ON l.id = s.layout_id "
      "WHERE x.cell_id = ? ORDER BY s.step");
  p.bind(1, from.cell_id);
  while (p.step()) {
    const std::string layout = p.text(1), data = p.blob(2);
    c.execute("INSERT OR IGNORE INTO param_layouts (layout) VALUES (?)", layout);
    c.execute("INSERT INTO param_snapshots (cell_id, run_id, step, layout_id, data) "
              "VALUES (?, ?, ?, (SELECT id FROM param_layouts WHERE layout = ?), ?)",
              cell.id, run_id, p.int64(0), layout, Blob{data});
  }
  db.record_event({cell.sweep_id, cell.id, run_id, EventKind::run_reused,
                   fmt::format("{} reused {} ({})", cell.key, text, from.identity.str()), t, std::nullopt});
  return ReuseLink{cell.id, cell.key, run_id, 0, text};
}

}  // namespace

std::vector<CheckedInput> check_reuse_sources(const std::vector<std::string>& paths, const std::string& db_path) {
  namespace fs = std::filesystem;
  std::vector<CheckedInput> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    const bool same = fs::exists(db_path, ec) && fs::exists(path, ec) ? fs::equivalent(path, db_path, ec)
                                                                      : fs::absolute(path).lexically_normal() ==
                                                                            fs::absolute(db_path).lexically_normal();
    EGM_REQUIRE(!same, ConfigError,
                "--reuse-from {} is the sweep's own database ({}): its finished runs are reused without the flag; "
                "nothing written",
                path, db_path);
    out.push_back(check_input_database(path, "--reuse-from"));
  }
  return out;
}

ReuseFromResult link_from_database(ResultsDb& db, int64_t sweep_id, const ReuseLaunch& launch,
                                   const CheckedInput& input) {
  EGM_CHECK(!db.read_only(), "link_from_database needs a writable database");
  ReuseFromResult out;
  if (input.version < 11) {
    out.note = fmt::format("--reuse-from {}: nothing reused; its schema ({}) predates egm's numerics version (11), "
                           "so none of its runs has a known identity",
                           input.given, input.version);
    return out;
  }
  Connection other(input.path, OpenMode::read_only);
  std::optional<Transaction> tx;
  begin_unless_in_one(tx, db.connection());
  const double t = unix_now();
  std::optional<int64_t> source;
  std::vector<std::string> corpora;  // the corpora of runs that matched but for their identity
  const std::vector<CellRow> to_run = db.cells_to_run(sweep_id);
  for (const CellRow& cell : to_run) {
    const RunIdentity wanted = wanted_identity(cell, launch);
    if (!wanted.known()) continue;
    for (const Candidate& k : candidates(other, cell.config_hash, /*except_cell=*/-1)) {
      if (!same_run(k.identity, wanted)) {
        if (k.identity.corpus_sha256 != wanted.corpus_sha256 &&
            std::find(corpora.begin(), corpora.end(), k.identity.corpus_sha256) == corpora.end())
          corpora.push_back(k.identity.corpus_sha256);
        continue;
      }
      if (!source) source = source_row(db.connection(), input, t);
      out.links.push_back(copy_link(db, other, cell, k, input, *source, t));
      break;
    }
  }
  if (tx) tx->commit();
  // A resume with every cell done or linked already has nothing to look for: no note.
  if (out.links.empty() && !to_run.empty()) {
    std::vector<std::string> short_shas;
    for (const std::string& c : corpora) short_shas.push_back(c.empty() ? "unknown" : c.substr(0, 12));
    out.note = fmt::format("--reuse-from {}: no finished run of it matches a cell to run{}", input.given,
                           corpora.empty() ? std::string()
                                           : fmt::format(" (it holds runs of another corpus: {})",
                                                         fmt::join(short_shas, ", ")));
  }
  return out;
}

std::vector<std::optional<std::string>> planned_links(ResultsDb* db, const std::vector<CellRow>& cells,
                                                      const ReuseLaunch& launch,
                                                      const std::vector<CheckedInput>& from) {
  std::vector<std::optional<std::string>> out(cells.size());
  // Where opening the sweep looks, in its order: this file, then each --reuse-from input.
  std::vector<std::pair<Connection*, std::string>> places;  // (file, " in PATH" for an input)
  if (db && db->schema_version() >= 11) places.emplace_back(&db->connection(), "");
  std::vector<std::unique_ptr<Connection>> others;
  for (const CheckedInput& input : from) {
    if (input.version < 11) continue;  // no run of it has a known identity
    others.push_back(std::make_unique<Connection>(input.path, OpenMode::read_only));
    places.emplace_back(others.back().get(), " in " + input.path);
  }
  // One read snapshot of each file for all the lookups (not a lock taken and
  // released per cell: a 100,000-cell sweep's dry run makes that many).
  // The lookups read cells and runs rows all over the file: mapped, not copied page by page.
  std::vector<std::unique_ptr<Transaction>> snapshots;
  for (const auto& [c, where] : places) {
    c->exec("PRAGMA mmap_size = 1073741824");
    snapshots.push_back(std::make_unique<Transaction>(*c, Transaction::Kind::deferred));
  }
  for (size_t i = 0; i < cells.size(); ++i)
    for (const auto& [c, where] : places)
      if (const std::optional<Candidate> k = match(*c, cells[i], launch, /*except_cell=*/-1)) {
        out[i] = link_text(*k) + where;
        break;
      }
  return out;
}

}  // namespace egm::db
