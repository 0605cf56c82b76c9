// The flags that pick a run config, shared by `egm train`, `bench` and
// `audit`: a preset or a JSON config file, a variant and seed, and
// `--set section.key=value` overrides (values parsed as JSON, else strings).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "config/run_config.h"

namespace egm::cli {

struct RunConfigFlags {
  std::string preset = "tiny";
  std::string config_file;
  std::string variant;
  int64_t seed = -1;
  int64_t steps = -1;
  std::vector<std::string> sets;
  // runtime
  int threads = 1;  // one per process: sweeps run one process per core
  DeviceName device;  // --device, parsed (default cpu)
  std::string data;
};

void add_run_config_flags(CLI::App* cmd, RunConfigFlags& flags, bool with_runtime = true);

// Resolves the flags into a validated config (throws ConfigError naming the flag).
RunConfig resolve_run_config(const RunConfigFlags& flags);
// In egm-torch only (resolve_runtime.cpp): checking that this machine has the device needs LibTorch.
RuntimeOptions resolve_runtime(const RunConfigFlags& flags);

}  // namespace egm::cli
