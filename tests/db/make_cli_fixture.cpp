// Writes the small results database the CLI test reads: one sweep "demo" with
// a done cell, a running cell with two train metrics, and a failed cell whose
// error needs CSV quoting. With a second argument "stale": the same sweep whose
// coordinator is gone (its last heartbeat an hour old).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "db/results_db.h"

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 3 && std::string(argv[2]) == "stale")) {
    std::fprintf(stderr, "usage: %s DB_PATH [stale]\n", argv[0]);
    return 2;
  }
  const bool stale = argc == 3;
  using namespace egm::db;
  std::filesystem::remove(argv[1]);
  ResultsDb db(argv[1], OpenMode::read_write_create);
  const int64_t sweep = db.create_or_load_sweep("demo", "{\"name\":\"demo\"}", "0123456789abcdef", false).sweep.id;
  std::vector<CellInput> cells;
  for (const char* v : {"base", "ega", "mope"}) {
    CellInput c;
    c.key = std::string(v) + "-s0";
    c.variant = v;
    c.seed = 0;
    c.config_json = "{}";
    c.config_hash = std::string("hash-") + v;
    c.max_steps = 100;
    c.max_attempts = 1;
    cells.push_back(c);
  }
  const auto ids = db.ensure_cells(sweep, cells);
  db.set_sweep_status(sweep, SweepStatus::running);
  // The coordinator's last heartbeat: an hour ago (gone), or an hour ahead, so
  // that it is alive for the whole test however slow the machine.
  const double t0 = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  db.set_clock([&] { return stale ? t0 - 3600 : t0 + 3600; });
  db.heartbeat(sweep);
  db.set_clock({});
  RunInfo info;
  info.host = "node1";
  egm::Measurements r;
  r.final_val = 1.4742;
  // base-s0 was trained by a modified build, whose diff the coordinator stored.
  RunInfo modified = info;
  modified.git_commit = "0123456789ab-dirty";
  modified.source_diff_sha256 = std::string(64, 'a');
  db.store_source_diff({*modified.source_diff_sha256, 48, "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n"});
  db.finish_attempt(db.start_attempt(ids[0], modified), RunStatus::done, "", r, {}, /*step=*/100);
  const int64_t running = db.start_attempt(ids[1], info);
  // Steps 10 and 20 ten seconds apart: 1 step/s.
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  db.record_metrics({{ids[1], running, 10, egm::MetricSplit::train, 2.5, 1e-3, 5000.0, now - 20},
                     {ids[1], running, 20, egm::MetricSplit::train, 2.25, 1e-3, 5000.0, now - 10}});
  db.finish_attempt(db.start_attempt(ids[2], info), RunStatus::failed, "bad value, \"x\" at step 3");
  return 0;
}
