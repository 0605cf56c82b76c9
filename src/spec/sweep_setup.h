// The coordinator's first step: spec file -> checked spec -> cells -> a sweep
// and its cells in the results database. The spec is loaded and checked before
// the database is opened, so a bad spec never creates or changes the file; the
// sweep and its cells are then written in one transaction (all or nothing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/results_db.h"
#include "db/reuse.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"

namespace egm::spec {

// What a launch brings besides the spec: the coordinator that claims the
// sweep (db/ownership.h) and the corpus its workers read. Both checked and
// written in the transaction that opens the sweep, before anything else.
struct SweepOpening {
  std::optional<db::Claimant> claimant;   // none: nobody claims it (egm submit)
  std::optional<db::SweepCorpus> corpus;  // none: not known here
  // With a corpus: link each cell to run to a finished run of the same
  // identity elsewhere in the database (db/reuse.h), in the same transaction.
  // none: train every cell (--no-reuse; the spec's "reuse": false is applied here too).
  struct Reuse {
    std::string device_kind;       // "cpu" or "cuda": the sweep's device
    int64_t numerics_version = 0;  // kNumericsVersion (config/run_config.h)
    std::vector<db::CheckedInput> from;  // --reuse-from, checked (db::check_reuse_sources)
  };
  std::optional<Reuse> reuse;
};

struct SweepSetup {
  ExperimentSpec spec;
  std::vector<Cell> cells;
  db::ResultsDb db;               // open read-write, at the current schema
  db::SweepOpenResult sweep;      // created, loaded, or created after superseding
  std::vector<int64_t> cell_ids;  // cell_ids[i] is the database id of cells[i]
  std::optional<db::SweepOwner> owner;   // with a claimant: the ownership it now holds
  std::optional<std::string> took_over;  // the line saying whose stale ownership it took over
  std::optional<std::string> corpus_note;  // a line about a corpus that could not be checked
  std::vector<db::ReuseLink> reused;       // cells linked to finished runs at this opening
  std::vector<std::string> reuse_notes;    // a --reuse-from input nothing matched in, and why
};

// Throws SpecError (bad spec: nothing touched), ConfigError (the sweep exists
// with another spec and on_change is refuse, or, with extend, the new spec
// drops or changes a cell; a live owner; another corpus than the sweep's; a
// --takeover without a database, a sweep or an owner: nothing written),
// DbError. Creates the database's folder when missing (not with --takeover).
SweepSetup open_sweep(const std::string& spec_path, const std::string& db_path, db::ChangedSpec on_change,
                      const SweepOpening& opening = {});
SweepSetup open_sweep(ExperimentSpec spec, const std::string& db_path, db::ChangedSpec on_change,
                      const SweepOpening& opening = {});

// The ownership rule (db/ownership.h) applied before anything is started
// (egm sweep, before mpirun starts its ranks): a ConfigError with the line
// the coordinator would give when the sweep is running elsewhere (or
// --takeover finds nobody to take over from). Read-only; says nothing when
// there is no database or no such sweep yet, or the database cannot be read
// without the coordinator's migration: the coordinator decides again, in the
// transaction that opens the sweep.
void precheck_owner(const std::string& db_path, const std::string& name, const db::Claimant& me);

// The rows ResultsDb::ensure_cells takes for `cells` (expand), in the same order.
std::vector<db::CellInput> to_cell_inputs(const ExperimentSpec& spec, const std::vector<Cell>& cells);

// The launch flags --new-sweep and --extend (at most one; the flags exclude
// each other) as a ChangedSpec.
inline db::ChangedSpec changed_spec(bool new_sweep, bool extend) {
  return new_sweep ? db::ChangedSpec::new_sweep : extend ? db::ChangedSpec::extend : db::ChangedSpec::refuse;
}

}  // namespace egm::spec
