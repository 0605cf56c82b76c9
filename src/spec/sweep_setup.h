// The coordinator's first step: spec file -> checked spec -> cells -> a sweep
// and its cells in the results database. The spec is loaded and checked before
// the database is opened, so a bad spec never creates or changes the file; the
// sweep and its cells are then written in one transaction (all or nothing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/results_db.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"

namespace egm::spec {

struct SweepSetup {
  ExperimentSpec spec;
  std::vector<Cell> cells;
  db::ResultsDb db;               // open read-write, at the current schema
  db::SweepOpenResult sweep;      // created, loaded, or created after superseding
  std::vector<int64_t> cell_ids;  // cell_ids[i] is the database id of cells[i]
};

// Throws SpecError (bad spec: nothing touched), ConfigError (the sweep exists
// with another spec and on_change is refuse, or, with extend, the new spec
// drops or changes a cell: nothing written), DbError. Creates the database's
// folder when missing.
SweepSetup open_sweep(const std::string& spec_path, const std::string& db_path, db::ChangedSpec on_change);
SweepSetup open_sweep(ExperimentSpec spec, const std::string& db_path, db::ChangedSpec on_change);

// The launch flags --new-sweep and --extend (at most one; the flags exclude
// each other) as a ChangedSpec.
inline db::ChangedSpec changed_spec(bool new_sweep, bool extend) {
  return new_sweep ? db::ChangedSpec::new_sweep : extend ? db::ChangedSpec::extend : db::ChangedSpec::refuse;
}

}  // namespace egm::spec
