// The one description of how a sweep is launched, carried from `egm submit`
// through the batch script's `egm sweep` to `egm-coordinator`. Each flag is
// defined once here (name, default, help, check); the front doors register
// these flags and pass them on with launch_flags(), so a flag cannot be lost
// on the way (as --device once was).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace egm::launch {

struct LaunchOptions {
  std::string spec_path;            // the experiment spec (positional)
  std::string db_path;              // empty: $EGM_DB, else runs/egm.sqlite
  std::string runs_dir = "runs";    // cells train in RUNS_DIR/<sweep>/<key>-<hash12>
  bool new_sweep = false;           // the spec changed: keep the old sweep as NAME@ID
  bool extend = false;              // the spec only adds cells: the sweep takes it, keeping its cells
  int threads_per_worker = 1;       // intra-op threads of each worker's run
  std::string device;               // cpu, cuda, cuda:N; empty: the spec's "device", else cpu
  int64_t checkpoint_interval = 0;  // 0: checkpoint at each eval (and on a stop)
  double stop_timeout_s = 120;      // after a stop signal: how long to wait for the checkpoints
  std::vector<std::string> grid;    // --grid PATH=V1,V2 | PATH=range(a,b[,step]), each one axis (spec/grid.h parses them)
};

// Registers the spec argument and the launch flags on `app` (any of egm
// sweep, egm submit, egm-coordinator), writing into `o`.
void add_launch_flags(CLI::App& app, LaunchOptions& o);

// The arguments that reproduce `o` on the next process's command line: the
// spec first, then every flag that differs from its default.
std::vector<std::string> launch_flags(const LaunchOptions& o);

// The device a sweep runs on: the flag when given, else the spec's field,
// else cpu. Parsed (ConfigError for a bad name).
std::string resolve_device(const std::string& flag, const std::string& spec_device);

}  // namespace egm::launch
