// egm merge: the sweeps of several results databases combined into a new one
// (clusters that each ran some seeds or variants of one spec). The inputs are
// opened read-only and never changed; the output is an ordinary egm database
// (analyze, report, serve, resume and --extend work on it), written to a
// temporary file next to it and renamed into place at the end, so a refusal or
// a failure leaves nothing.
//
// Sweeps are matched by name (superseded ones, NAME@ID, are left out). Their
// specs must agree except in the seeds and variants they list (and the
// published numbers, baseline and factors that name variants): the merged
// sweep's spec lists the union, so the spec file of the whole sweep resumes
// it. Cells are matched by key (variant, seed, grid point) and must have the
// same run config (config_hash). A cell done in several inputs with the same
// results is kept once; with different results it is a conflict, refused
// unless `prefer` names the input whose cells win. A cell done in one input
// and not in another is taken from where it is done. Two inputs that trained
// one run identity (run/identity.h) in different cells (sweep X of one, sweep
// Y of the other) keep one run: the other cell is linked to it as a reused
// run is (db/reuse.h: no wall time, reused_run, reused_from, the kept run's
// results, metrics and parameters), and the summary says so. With the same
// results (what one identity on one numerics version gives) that needs no
// flag and the first input's run is kept; with different results it is a
// conflict, refused unless `prefer` names the input whose run is kept. Recorded corpora (a
// sweeps column whose name holds "corpus", when the inputs have one) must agree.
//
// Each cell is copied with everything of it from the input it is taken from:
// its attempts (host, commit, source diff, compute), metrics, learned
// parameters and events, renumbered, and each merged sweep's looks (egm sweep
// --until's record) as each input has them, in time order: two inputs that
// both ran a sequence keep both records; each input is a row of merge_sources and
// every copied run names it (runs.merge_source). Memory stays bounded: the rows
// move SQLite to SQLite (ATTACH, INSERT ... SELECT); only a table of the
// cells' choices is kept, in a temporary table.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace egm::db {

struct MergeOptions {
  std::string out;                  // the new database
  std::vector<std::string> inputs;  // at least one; each an egm results database
  std::string prefer;               // empty, or one of `inputs`: its cells win a conflict
  bool force = false;               // replace `out` when it exists
};

struct MergedSweep {
  std::string name;
  int64_t cells = 0;
  int64_t done = 0;
  std::vector<int64_t> cells_from;  // per input, in inputs' order
  int64_t kept_once = 0;            // cells done in several inputs with the same results
  int64_t preferred = 0;            // conflicts decided by `prefer`
  bool spec_widened = false;        // the inputs' specs differed in seeds or variants
  // Cells whose run another input trained too, with one identity (issue 38),
  // linked to that input's run as a reused run is: with the same results, and
  // with different results under --prefer (its input's run kept).
  int64_t linked = 0;
  int64_t linked_preferred = 0;
};

// "2 cells trained in another input too, with one identity and the same
// results: linked to that run, counted once" (and the --prefer part); what egm
// merge prints and its sweep_merged event says. Empty when none.
std::string twins_text(const MergedSweep& sweep);

struct MergeSummary {
  std::vector<MergedSweep> sweeps;
  std::vector<std::string> notes;  // what was left out (superseded sweeps)
  int64_t runs = 0;
  int64_t metrics = 0;
};

// Throws ConfigError with one line for bad input (out exists without force, an
// input missing, not an egm database, from a newer egm, damaged, a conflict, a
// mismatched spec or corpus); nothing is written then. `progress` gets a line
// per step.
// A database from elsewhere, checked before anything of it is read (the input
// checks of egm merge, used by egm sweep --reuse-from too): a regular file, an
// egm database of schema 5 to this egm's, SQLite's quick_check, and the
// untrusted-input checks of db/schema_check.h. Throws ConfigError with one line
// that names it as `role` ("input", "--reuse-from") and ends "nothing written".
struct CheckedInput {
  std::string given;  // as on the command line (messages)
  std::string path;   // absolute
  int version = 0;
  int64_t size = 0;
};
CheckedInput check_input_database(const std::string& given, const std::string& role);

MergeSummary merge_databases(const MergeOptions& options,
                             const std::function<void(const std::string&)>& progress = {});

}  // namespace egm::db
