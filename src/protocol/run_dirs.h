// Where a cell's files live: RUNS_DIR/<sweep>/<cell key>-<config hash 12>
// (config.json, metrics.jsonl, checkpoint.egmc). The path is derived from the
// cell every time it is assigned, never read back from the database, so a
// retry, a resume or a requeued job on another node finds the same folder.
//
// A sweep folder belongs to one sweep: sweep.json inside it records the
// sweep's id and creation time. A folder of the same name left by another
// sweep (superseded with --new-sweep, or a database that was deleted) is moved
// aside before anything runs, so no cell resumes from someone else's
// checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace egm::protocol {

// RUNS_DIR/SWEEP/KEY-HASH12.
std::string run_dir(const std::string& runs_dir, const std::string& sweep_name, const std::string& cell_key,
                    const std::string& config_hash);

struct SweepIdentity {
  int64_t id = 0;
  std::string name;
  std::string spec_hash;
  double created_at = 0;  // tells apart two sweeps with the same id in different databases
};

struct SweepDir {
  std::string path;                         // RUNS_DIR/SWEEP, ready to use
  std::optional<std::string> moved_aside;   // where another sweep's folder went
};

// Creates RUNS_DIR/SWEEP with its sweep.json, or checks that an existing one
// is this sweep's; a foreign or unmarked folder is renamed to SWEEP@ID
// (its sweep's id; SWEEP@ID.2, ... when taken; SWEEP@unknown for no marker).
SweepDir prepare_sweep_dir(const std::string& runs_dir, const SweepIdentity& sweep);

}  // namespace egm::protocol
