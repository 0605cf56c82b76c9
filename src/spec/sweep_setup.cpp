#include "spec/sweep_setup.h"

#include <filesystem>

#include "util/files.h"

namespace egm::spec {

SweepSetup open_sweep(const std::string& spec_path, const std::string& db_path, db::ChangedSpec on_change) {
  // Checked in full before the database is opened: a bad spec touches nothing.
  return open_sweep(load_spec(spec_path), db_path, on_change);
}

SweepSetup open_sweep(ExperimentSpec spec, const std::string& db_path, db::ChangedSpec on_change) {
  std::vector<Cell> cells = expand(spec);
  const std::vector<db::CellInput> inputs = to_cell_inputs(spec, cells);
  const std::filesystem::path parent = std::filesystem::path(db_path).parent_path();
  if (!parent.empty()) make_dirs(parent.string());
  db::ResultsDb db(db_path, db::OpenMode::read_write_create);
  db::SweepOpenResult sweep;
  std::vector<int64_t> ids;
  {
    // The sweep row and its cells appear together, or (on a refusal) not at all.
    db::Transaction tx(db.connection());
    sweep = db.create_or_load_sweep(spec.name, spec.canonical.dump(2), spec.hash, on_change);
    ids = db.ensure_cells(sweep.sweep.id, inputs);
    tx.commit();
  }
  return SweepSetup{std::move(spec), std::move(cells), std::move(db), std::move(sweep), std::move(ids)};
}

}  // namespace egm::spec
