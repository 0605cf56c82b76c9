// egm runs: the cells of the sweeps (one row per variant x seed, with results),
// or with --attempts every attempt at them; filters and table/csv/json output;
// --show-diff KEY the source modification behind a cell's attempts.
// Read-only: never creates or changes the database.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/read_verbs.h"
#include "db/results_db.h"
#include "db/reuse.h"
#include "db/table_format.h"
#include "util/error.h"
#include "util/json_limits.h"
#include "util/terminal_text.h"

namespace egm::cli {
namespace {

struct RunsOptions {
  std::string db;
  std::vector<std::string> sweeps, variants, statuses;
  std::vector<int64_t> seeds;
  std::string format = "table";
  bool attempts = false;
  bool all = false;
  std::string show_diff;  // a cell key: print the source modification behind its attempts
};

db::Value opt(const std::optional<double>& v) { return v ? db::Value(*v) : db::Value(); }
db::Value opt(const std::optional<int64_t>& v) { return v ? db::Value(*v) : db::Value(); }

// Errors can be long; the aligned table keeps the start of them.
std::string shorten(const std::string& s, db::Format format) {
  // Cut only in the aligned table, where one long error would widen every row; CSV and JSON keep the whole text.
  constexpr size_t kMax = 60;
  if (format != db::Format::table || s.size() <= kMax) return s;
  return s.substr(0, kMax - 3) + "...";
}

// A grid point's values for people: "train.lr=0.001 model.dropout=0".
std::string grid_text(const std::string& grid_json) {
  std::string s;
  nlohmann::json j;
  try {  // bounded: a grid_json from elsewhere may nest 300,000 deep (dump() would recurse on it)
    j = parse_json(grid_json, JsonLimits::user(), "cells.grid_json");
  } catch (const JsonError&) {
    return "(unreadable grid_json)";
  }
  if (!j.is_object()) return "(unreadable grid_json)";
  for (const auto& [path, value] : j.items()) {
    if (!s.empty()) s += ' ';
    s += path + "=" + (value.is_string() ? value.get<std::string>()
                       : value.is_number_float() ? fmt::format("{}", value.get<double>())
                                                 : value.dump());
  }
  return s;
}

db::Table cells_table(db::ResultsDb& results, const db::CellFilter& f, db::Format format) {
  const std::vector<db::CellRow> cells = results.list_cells(f);
  // The grid columns only when a listed cell has a grid point: without grids the table is as before.
  bool grid = false;
  for (const auto& c : cells) grid = grid || c.grid_point.has_value();
  // Where a reused cell's run came from (db/reuse.h); the column only when a listed cell has one.
  std::map<int64_t, std::string> reused;
  std::set<int64_t> sweeps;
  for (const auto& c : cells)
    if (sweeps.insert(c.sweep_id).second)
      for (const db::ReusedCell& r : db::reused_cells(results, c.sweep_id)) reused[r.cell_id] = r.from;
  db::Table t;
  t.columns = {"sweep", "cell", "variant", "seed"};
  if (grid) t.columns.insert(t.columns.end(), {"grid_point", "grid"});
  t.columns.insert(t.columns.end(), {"status", "attempts", "failures", "step"});
  for (const MeasurementField& m : cell_measurements()) t.columns.push_back(m.name);
  t.columns.push_back("last_error");
  if (!reused.empty()) t.columns.push_back("reused_from");
  for (const auto& c : cells) {
    // A done cell shows the step it finished at; others show how far their latest attempt got.
    const std::optional<int64_t> step = c.status == db::CellStatus::done && c.final_step ? c.final_step : c.latest_step;
    std::vector<db::Value> row{c.sweep_name, c.key, c.variant, c.seed};
    if (grid) {
      row.push_back(opt(c.grid_point));
      row.push_back(c.grid_json ? db::Value(grid_text(*c.grid_json)) : db::Value());
    }
    row.insert(row.end(), {std::string(db::to_string(c.status)), int64_t{c.attempts}, int64_t{c.failures}, opt(step)});
    for (const MeasurementField& m : cell_measurements()) row.push_back(opt(c.results.*m.value));
    row.push_back(c.last_error ? db::Value(shorten(*c.last_error, format)) : db::Value());
    if (!reused.empty()) {
      const auto it = reused.find(c.id);
      row.push_back(it == reused.end() ? db::Value() : db::Value(it->second));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

db::Table attempts_table(db::ResultsDb& results, const db::CellFilter& f, db::Format format) {
  db::Table t;
  t.columns = {"sweep", "cell", "variant", "seed", "attempt", "status", "host", "device", "world_size",
               "backend", "started_utc", "duration_s", "resumed_from_step", "git_commit", "source_diff", "error"};
  const std::vector<db::RunRow> runs = results.list_runs(f);
  // A reused cell's link (db/reuse.h): the column only when a listed attempt is one.
  const bool reused = std::any_of(runs.begin(), runs.end(), [](const db::RunRow& r) { return r.reused_from.has_value(); });
  if (reused) t.columns.push_back("reused_from");
  for (const auto& r : runs) {
    t.rows.push_back({r.sweep_name, r.cell_key, r.variant, r.seed, int64_t{r.attempt},
                      std::string(db::to_string(r.status)), r.info.host, r.info.device.str(), int64_t{r.info.world_size},
                      std::string(to_string(r.info.backend)), db::format_utc(r.started_at),
                      r.ended_at ? db::Value(std::round((*r.ended_at - r.started_at) * 10) / 10) : db::Value(),
                      opt(r.info.resumed_from_step), r.info.git_commit,
                      // the sha256 in full for scripts, its first 12 in the aligned table (as git shows commits)
                      r.info.source_diff_sha256
                          ? db::Value(format == db::Format::table ? r.info.source_diff_sha256->substr(0, 12)
                                                                  : *r.info.source_diff_sha256)
                          : db::Value(),
                      r.error ? db::Value(shorten(*r.error, format)) : db::Value()});
    if (reused) t.rows.back().push_back(r.reused_from ? db::Value(*r.reused_from) : db::Value());
  }
  return t;
}

// egm runs --show-diff KEY: the modification(s) of the builds that trained the
// cell's attempts, as `git diff HEAD` wrote them (pipe to `git apply` on their
// commit), one per distinct diff; a clean build, an unknown diff or a
// truncated one is said on stderr.
void show_diff(db::ResultsDb& results, const RunsOptions& o) {
  db::CellFilter f;
  f.sweeps = o.sweeps;
  f.include_superseded = o.all;
  std::vector<db::RunRow> runs;
  std::set<std::string> sweeps;
  for (db::RunRow& r : results.list_runs(f))
    if (r.cell_key == o.show_diff) {
      sweeps.insert(r.sweep_name);
      runs.push_back(std::move(r));
    }
  EGM_REQUIRE(!runs.empty(), ConfigError, "--show-diff {}: no attempt of a cell {} in {}{}", o.show_diff,
              o.show_diff, o.sweeps.empty() ? "any sweep" : fmt::format("sweep {}", fmt::join(o.sweeps, ", ")),
              o.all ? "" : " (--all: superseded sweeps too)");
  EGM_REQUIRE(sweeps.size() == 1, ConfigError, "--show-diff {}: sweeps {} each have a cell {}; pass --sweep NAME",
              o.show_diff, fmt::join(sweeps, ", "), o.show_diff);
  std::vector<std::string> seen;
  for (const db::RunRow& r : runs) {
    const std::string where = fmt::format("{} attempt {} (egm {})", r.cell_key, r.attempt, r.info.git_commit);
    if (!r.info.source_diff_sha256) {
      std::cerr << fmt::format("{}: built from a clean tree{}\n", where,
                               results.schema_version() < 6 ? " or not recorded (a database from before schema 6)"
                                                            : "");
      continue;
    }
    const std::string& sha = *r.info.source_diff_sha256;
    // Each distinct diff once: the attempts of one build share it.
    if (std::find(seen.begin(), seen.end(), sha) != seen.end()) continue;
    seen.push_back(sha);
    const std::optional<db::SourceDiff> d = results.source_diff(sha);
    if (!d) {
      std::cerr << fmt::format("{}: modified (diff sha256 {}), but the diff was not stored: that build ran "
                               "elsewhere than the coordinator\n",
                               where, sha);
      continue;
    }
    print_safe("# {}: diff sha256 {}, {} bytes\n{}", where, sha, d->size, d->diff);
    if (d->truncated())
      std::cerr << fmt::format("{}: the diff is {} bytes; its first {} are stored\n", where, d->size, d->diff.size());
  }
}

// A --sweep or --variant that names nothing in the database is a typo: refused
// in one line naming what there is (as egm status refuses a sweep), not
// answered with an empty table. `listed`: the variants the table already
// shows, so the variants are looked up only when one of them is missing.
void require_known_filters(db::ResultsDb& results, const RunsOptions& o, const std::set<std::string>& listed) {
  // A superseded sweep (NAME@ID) counts as known too: find_sweep looks up any name.
  for (const std::string& name : o.sweeps) {
    if (results.find_sweep(name)) continue;
    std::vector<std::string> names;
    for (const auto& r : results.list_sweeps(true)) names.push_back(r.name);
    EGM_THROW(ConfigError, "--sweep {}: no sweep named '{}' in {}{}{}", name, name, results.path(),
              names.empty() ? "" : "; sweeps: ", fmt::join(names, ", "));
  }
  for (const std::string& variant : o.variants) {
    if (listed.count(variant)) continue;
    db::CellFilter f;
    f.sweeps = o.sweeps;
    f.include_superseded = o.all;
    std::set<std::string> known;
    for (const db::CellRow& c : results.list_cells(f)) known.insert(c.variant);
    if (known.count(variant)) continue;
    EGM_THROW(ConfigError, "--variant {}: no cell of variant '{}' in {}{}{}", variant, variant,
              o.sweeps.empty() ? results.path() : fmt::format("sweep {}", fmt::join(o.sweeps, ", ")),
              known.empty() ? "" : "; variants: ", fmt::join(known, ", "));
  }
}

void run_runs(const RunsOptions& o) {
  const db::Format format = db::parse_format(o.format);
  // Check the statuses before touching the file, so a typo is named as one.
  for (const auto& s : o.statuses) {
    if (o.attempts)
      db::parse_run_status(s);
    else
      db::parse_cell_status(s);
  }
  db::ResultsDb results = db::open_for_reading(o.db);
  if (!o.show_diff.empty()) return show_diff(results, o);
  db::CellFilter f;
  f.sweeps = o.sweeps;
  f.variants = o.variants;
  f.seeds = o.seeds;
  f.statuses = o.statuses;
  f.include_superseded = o.all;
  const db::Table t = o.attempts ? attempts_table(results, f, format) : cells_table(results, f, format);
  std::set<std::string> listed;
  const auto column = std::find(t.columns.begin(), t.columns.end(), "variant") - t.columns.begin();
  // Both tables have a "variant" column holding text, so the get cannot fail.
  for (const auto& row : t.rows) listed.insert(std::get<std::string>(row[static_cast<size_t>(column)]));
  require_known_filters(results, o, listed);
  db::FormatOptions options;
  options.float_digits = 5;
  print_table(t, format, options);  // as egm query prints it
}

}  // namespace

void register_runs_command(CLI::App& app) {
  auto opts = std::make_shared<RunsOptions>();
  auto* cmd = app.add_subcommand("runs", "list cells (variant x seed) and their results, or every attempt (read-only)");
  add_db_flag(cmd, opts->db);
  cmd->add_option("--sweep", opts->sweeps, "only this sweep (repeatable)");
  cmd->add_option("--variant", opts->variants, "only this variant (repeatable)");
  cmd->add_option("--status", opts->statuses,
                  "only this status (repeatable): pending, running, done, failed, interrupted");
  cmd->add_option("--seed", opts->seeds, "only this seed (repeatable)");
  cmd->add_option("--format", opts->format, "table, csv or json")->capture_default_str();
  cmd->add_flag("--attempts", opts->attempts, "one row per attempt (host, device, duration, error)");
  cmd->add_flag("--all", opts->all, "also sweeps superseded by --new-sweep");
  cmd->add_option("--show-diff", opts->show_diff,
                  "print the source modification (git diff HEAD of its build) behind each attempt of cell KEY")
      ->type_name("KEY");
  cmd->callback([opts] { run_runs(*opts); });
}

}  // namespace egm::cli
