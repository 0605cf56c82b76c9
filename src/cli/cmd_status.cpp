// egm status: where each sweep stands, read from the results database while
// the coordinator writes it (read-only; never creates or changes the file).
// A sweep submitted with `egm submit --slurm` also shows its Slurm job and the
// job's state, asked of squeue (sacct once the controller forgot the job).
// A 'running' sweep whose coordinator stopped writing its heartbeat shows as
// stale, its running cells as interrupted; failed cells show one line each.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "db/results_db.h"
#include "db/reuse.h"
#include "db/table_format.h"
#include "sequential/look.h"
#include "slurm/slurm_commands.h"
#include "util/terminal_text.h"
#include "util/error.h"
#include "util/unix_time.h"

namespace egm::cli {
namespace {

struct StatusOptions {
  std::string db;
  std::string sweep;
  bool all = false;
  std::string format = "table";  // table (for people) or json (sweep_json below)
};

std::string progress_bar(double fraction, int width = 40) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  // floor: the bar is full only when the work is, never by rounding up at 99.9%.
  const int filled = static_cast<int>(std::floor(fraction * width));
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '-') +
         "]";
}

// The first line of an error text (a database written by an older egm may hold a
// whole LibTorch stack trace there).
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (const size_t trace = line.find("Exception raised from "); trace != std::string::npos) line.resize(trace);
  return line;
}

// A 'running' sweep without a heartbeat for a while has lost its coordinator:
// nothing runs, whatever the rows say; its running cells count as interrupted.
void count_stale_as_interrupted(db::SweepProgress& p) {
  p.interrupted += p.running;
  p.running = 0;
  p.eta_s.reset();
}

void print_sweep(db::ResultsDb& results, const db::SweepRow& sweep) {
  db::SweepProgress p = results.sweep_progress(sweep.id);
  const double now = unix_now();
  // A 'running' sweep without a heartbeat for a while has lost its coordinator:
  // nothing runs, whatever the rows say; the next `egm sweep` resumes it.
  const std::optional<double> stale = db::stale_since(sweep, now);
  std::string header = fmt::format("sweep {}  [{}]  created {} UTC  spec {}", sweep.name,
                                   stale ? "stale" : db::to_string(sweep.status), db::format_utc(sweep.created_at),
                                   sweep.spec_hash.substr(0, 12));
  // squeue/sacct are asked per listed sweep (up to 30 s each when the controller is slow): only for submitted sweeps.
  if (sweep.slurm_job_id)
    header += fmt::format("  slurm job {}: {}", *sweep.slurm_job_id, slurm::query_job_state(*sweep.slurm_job_id).state);
  // print_safe: sweep names and hosts come from the database, which may hold control bytes.
  print_safe("{}\n", header);
  // Who runs it (schema v9): the coordinator a second launch would be refused by.
  if (sweep.owner && !stale)
    print_safe("  coordinator pid {} on {}{}, last heartbeat {} ago\n", sweep.owner->pid, sweep.owner->host,
               sweep.owner->slurm_job ? " (Slurm job " + *sweep.owner->slurm_job + ")" : "",
               sweep.owner->heartbeat ? db::format_duration(std::max(0.0, now - *sweep.owner->heartbeat)) : "?");
  if (stale) {
    print_safe("  stale: no heartbeat since {} UTC ({} ago), coordinator gone? Its running cells count as "
               "interrupted; run the sweep again (egm sweep SPEC) to resume them\n",
               db::format_utc(*stale), db::format_duration(now - *stale));
    count_stale_as_interrupted(p);
  }
  print_safe("  {} cells: {} done, {} running, {} pending, {} failed ({} with no retries left), {} interrupted\n",
             p.total, p.done, p.running, p.pending, p.failed, p.exhausted, p.interrupted);
  // Progress of what will run: cells out of retries leave the denominator.
  const int64_t steps_to_run = p.steps_total - p.steps_given_up;
  const double fraction = steps_to_run > 0 ? static_cast<double>(p.steps_done) / static_cast<double>(steps_to_run) : 1;
  std::string eta = "ETA unknown";
  // Zero means every cell is done or given up; no value means nothing to estimate from yet.
  if (p.eta_s) eta = *p.eta_s == 0 ? "nothing left to run" : "ETA " + db::format_duration(*p.eta_s);
  print_safe("  {} {:5.1f}%  {}/{} steps  {}\n", progress_bar(fraction), 100.0 * fraction, p.steps_done, steps_to_run,
             eta);
  // Cells that took a finished run of their identity instead of training (db/reuse.h).
  if (const std::string line = db::reuse_line(db::reused_cells(results, sweep.id), p.total); !line.empty())
    print_safe("  {}\n", line);
  // A sequential sweep (egm sweep --until, schema v10): each claim at its last look.
  {
    std::string next;
    for (const db::LookRow& l : results.last_look(sweep.id)) {
      print_safe("  {}\n", sequential::look_line(l));
      next = l.next;
    }
    if (!next.empty()) print_safe("  then: {}\n", next);
  }
  // Failed cells, one line each: the error's own message (errors.log in the
  // run folder and the attempt_failed event hold the full text).
  if (p.failed > 0) {
    db::CellFilter filter;
    filter.sweep_id = sweep.id;
    filter.statuses = {db::to_string(db::CellStatus::failed)};
    for (const db::CellRow& c : results.list_cells(filter))
      print_safe("  failed  {} (failure {} of {} allowed; {}): {}\n", c.key, c.failures, c.max_attempts,
                 c.failures >= c.max_attempts ? "given up" : "will retry",
                 first_line(c.last_error.value_or("(no error text)")));
  }
  if (p.running_cells.empty()) return;
  db::Table t;
  t.columns = {stale ? "interrupted" : "running", "attempt", "step", "loss", "steps/s", "host", "device", "for"};
  for (const auto& r : p.running_cells) {
    auto opt = [](const auto& v) { return v ? db::Value(*v) : db::Value(); };
    t.rows.push_back({r.key, int64_t{r.attempt},
                      r.step ? db::Value(fmt::format("{}/{}", *r.step, r.max_steps)) : db::Value(),
                      opt(r.loss), r.steps_per_s ? db::Value(std::round(*r.steps_per_s * 100) / 100) : db::Value(),
                      r.host, r.device, db::format_duration((stale ? *stale : now) - r.started_at)});
  }
  db::FormatOptions options;
  options.float_digits = 5;
  // Indented line by line under the sweep's header.
  const std::string text = db::format_table(t, db::Format::table, options);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    print_safe("    {}\n", text.substr(pos, end - pos));
    pos = end + 1;
  }
}

// egm status --format json: what the text shows, one object per sweep, for
// scripts (times in UNIX seconds, absent values null).
nlohmann::json sweep_json(db::ResultsDb& results, const db::SweepRow& sweep) {
  db::SweepProgress p = results.sweep_progress(sweep.id);
  const double now = unix_now();
  const std::optional<double> stale = db::stale_since(sweep, now);
  // The same counting as the text form, so scripts and people see the same numbers.
  if (stale) count_stale_as_interrupted(p);
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json j;
  j["sweep"] = sweep.name;
  j["status"] = stale ? std::string("stale") : std::string(db::to_string(sweep.status));
  j["stale_since"] = opt(stale);
  j["created_at"] = sweep.created_at;
  j["spec_hash"] = sweep.spec_hash;
  j["slurm_job"] = nullptr;
  if (sweep.slurm_job_id)
    j["slurm_job"] = {{"id", *sweep.slurm_job_id}, {"state", slurm::query_job_state(*sweep.slurm_job_id).state}};
  j["coordinator"] = nullptr;
  if (sweep.owner && !stale)
    j["coordinator"] = {{"pid", sweep.owner->pid},
                        {"host", sweep.owner->host},
                        {"slurm_job", opt(sweep.owner->slurm_job)},
                        {"heartbeat_at", opt(sweep.owner->heartbeat)}};
  j["cells"] = {{"total", p.total},     {"done", p.done},           {"running", p.running},
                {"pending", p.pending}, {"failed", p.failed},       {"failed_no_retries_left", p.exhausted},
                {"interrupted", p.interrupted}};
  j["reused_cells"] = nlohmann::json::array();
  for (const db::ReusedCell& r : db::reused_cells(results, sweep.id))
    j["reused_cells"].push_back({{"cell", r.key}, {"from", r.from}, {"original_run", opt(r.original_run)},
                                 {"original_sweep", opt(r.original_sweep)}});
  j["steps_done"] = p.steps_done;
  j["steps_to_run"] = p.steps_total - p.steps_given_up;
  j["eta_s"] = opt(p.eta_s);
  j["looks"] = nlohmann::json::array();
  for (const db::LookRow& l : results.last_look(sweep.id))
    j["looks"].push_back({{"look", l.look}, {"claim", l.claim}, {"seeds", l.seeds}, {"estimate", opt(l.estimate)},
                          {"lower", opt(l.lower)}, {"upper", opt(l.upper)}, {"decision", l.decision},
                          {"settled", l.settled}, {"next", l.next}});
  j["failed_cells"] = nlohmann::json::array();
  if (p.failed > 0) {
    db::CellFilter filter;
    filter.sweep_id = sweep.id;
    filter.statuses = {db::to_string(db::CellStatus::failed)};
    for (const db::CellRow& c : results.list_cells(filter))
      j["failed_cells"].push_back({{"cell", c.key}, {"failures", c.failures}, {"max_attempts", c.max_attempts},
                                   {"error", opt(c.last_error)}});
  }
  j["running_cells"] = nlohmann::json::array();
  for (const auto& r : p.running_cells)
    j["running_cells"].push_back({{"cell", r.key}, {"attempt", r.attempt}, {"step", opt(r.step)},
                                  {"max_steps", r.max_steps}, {"loss", opt(r.loss)},
                                  {"steps_per_s", opt(r.steps_per_s)}, {"host", r.host}, {"device", r.device},
                                  {"started_at", r.started_at}, {"interrupted", stale.has_value()}});
  return j;
}

void run_status(const StatusOptions& o) {
  db::ResultsDb results = db::open_for_reading(o.db);
  std::vector<db::SweepRow> sweeps;
  if (!o.sweep.empty()) {
    std::optional<db::SweepRow> s = results.find_sweep(o.sweep);
    if (!s) {
      std::vector<std::string> names;
      for (const auto& r : results.list_sweeps(true)) names.push_back(r.name);
      EGM_THROW(ConfigError, "no sweep named '{}' in {}{}{}", o.sweep, results.path(),
                names.empty() ? "" : "; sweeps: ", fmt::join(names, ", "));
    }
    sweeps.push_back(*s);
  } else {
    // Superseded sweeps (NAME@ID) only with --all: they are history, not work.
    sweeps = results.list_sweeps(o.all);
  }
  if (o.format == "json") {
    nlohmann::json all = nlohmann::json::array();
    for (const db::SweepRow& s : sweeps) all.push_back(sweep_json(results, s));
    fmt::print("{}\n", all.dump(2));
    return;
  }
  if (sweeps.empty()) {
    print_safe("no sweeps in {}\n", results.path());
    return;
  }
  for (size_t i = 0; i < sweeps.size(); ++i) {
    if (i) print_safe("\n");
    print_sweep(results, sweeps[i]);
  }
}

}  // namespace

void register_status_command(CLI::App& app) {
  auto opts = std::make_shared<StatusOptions>();
  auto* cmd = app.add_subcommand("status", "progress of each sweep, from the results database (read-only)");
  add_db_flag(cmd, opts->db);
  cmd->add_option("--sweep", opts->sweep, "only this sweep");
  cmd->add_flag("--all", opts->all, "also sweeps superseded by --new-sweep");
  cmd->add_option("--format", opts->format, "table (for people) or json (one object per sweep)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->callback([opts] { run_status(*opts); });
}

}  // namespace egm::cli
