// The one description of how a sweep is launched, carried from `egm submit`
// through the batch script (which runs the launch line `egm sweep SPEC
// --print-command` renders) to `egm-coordinator`. Each flag is
// defined once here (name, default, help, check); the front doors register
// these flags and pass them on with launch_flags(), so a flag cannot be lost
// on the way (as --device once was).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "run/device.h"

namespace egm::launch {

struct LaunchOptions {
  std::string spec_path;            // the experiment spec (positional)
  std::string db_path;              // empty: $EGM_DB, else runs/egm.sqlite
  std::string runs_dir = "runs";    // cells train in RUNS_DIR/<sweep>/<key>-<hash12>
  bool new_sweep = false;           // the spec changed: keep the old sweep as NAME@ID
  bool extend = false;              // the spec only adds cells: the sweep takes it, keeping its cells
  bool takeover = false;            // take the sweep from an owner that stopped beating (db/ownership.h)
  std::vector<std::string> reuse_from;  // --reuse-from: other databases whose finished runs cells may take (db/reuse.h)
  bool no_reuse = false;            // train every cell, even one a finished run of its identity could stand for (db/reuse.h)
  int threads_per_worker = 1;       // intra-op threads of each worker's run
  std::optional<DeviceName> device;  // --device, parsed; none: the spec's "device", else cpu
  int64_t checkpoint_interval = 0;  // 0: checkpoint at each eval (and on a stop)
  double stop_timeout_s = 120;      // after a stop signal: how long to wait for the checkpoints
  std::vector<std::string> grid;    // --grid PATH=V1,V2 | PATH=range(a,b[,step]), each one axis (spec/grid.h parses them)
};

// Registers `--device`, parsed into a DeviceName as it is read (a bad name is
// CLI11's one-line error naming the flag), handed to `set`. The one
// definition of the flag's parsing, for the launch flags and egm train/bench/audit.
CLI::Option* add_device_option(CLI::App& app, std::function<void(const DeviceName&)> set, const std::string& help);

// The checks of a count flag: a whole number of at least 1 (--workers,
// --threads-per-worker, --max-cells, egm bench --timed-steps), shown as
// POSITIVE in --help, or of at least 0 (--checkpoint-every, egm bench
// --warmup); refused as "'0' must be at least 1". (CLI11's PositiveNumber is a
// range of doubles: its refusal printed the largest double's 309 digits.)
CLI::Validator positive_count();
CLI::Validator non_negative_count();

// --checkpoint-every, of egm sweep, egm submit and egm train: defined once.
CLI::Option* add_checkpoint_every_option(CLI::App& app, int64_t& interval);

// Registers the spec argument and the launch flags on `app` (any of egm
// sweep, egm submit, egm-coordinator), writing into `o`.
void add_launch_flags(CLI::App& app, LaunchOptions& o);

// The arguments that reproduce `o` on the next process's command line: the
// spec first, then every flag that differs from its default.
std::vector<std::string> launch_flags(const LaunchOptions& o);

// The device a sweep runs on: the flag when given, else the spec's field, else cpu.
DeviceName resolve_device(const std::optional<DeviceName>& flag, const std::optional<DeviceName>& spec_device);

}  // namespace egm::launch
