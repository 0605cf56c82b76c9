// The run config flags of train, bench and audit added to their commands, and
// the run config they give (preset or file, variant, seed, --set overrides).
#include "cli/run_options.h"

#include "launch/launch_options.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace egm::cli {

void add_run_config_flags(CLI::App* cmd, RunConfigFlags& f, bool with_runtime) {
  cmd->add_option("--preset", f.preset, "paper, small or tiny")->capture_default_str();
  cmd->add_option("--config", f.config_file, "a run config JSON file (its preset and values, then the flags)");
  cmd->add_option("--variant", f.variant, "model variant (base, ega, mope, ega_mope, ... or ATTENTION+POSITION)");
  cmd->add_option("--seed", f.seed, "seed: initialisation, data order and dropout");
  cmd->add_option("--steps", f.steps, "optimiser steps (train.max_steps)");
  cmd->add_option("--set", f.sets, "override a field: section.key=value, e.g. --set model.dropout=0 (repeatable)");
  if (with_runtime) {
    cmd->add_option("--threads", f.threads, "intra-op threads (0 = all cores; more than the free cores slows LibTorch sharply)")->capture_default_str();
    launch::add_device_option(*cmd, [&f](const DeviceName& d) { f.device = d; }, "cpu (default), cuda or cuda:N");
    cmd->add_option("--data", f.data, "corpus file (default: $EGM_DATA, else data/tinyshakespeare/input.txt)");
  }
}

RunConfig resolve_run_config(const RunConfigFlags& f) {
  // A file's "preset" wins over --preset (run_config_from_json reads it).
  const nlohmann::json j =
      f.config_file.empty() ? nlohmann::json::object() : read_json_file(f.config_file, JsonLimits::user());
  RunConfig c = run_config_from_json(j, f.preset);
  nlohmann::json overrides = nlohmann::json::object();
  for (const std::string& s : f.sets) {
    auto eq = s.find('=');
    EGM_REQUIRE(eq != std::string::npos && eq > 0, ConfigError, "--set {}: expected section.key=value", s);
    std::string key = s.substr(0, eq), text = s.substr(eq + 1);
    nlohmann::json value;
    try {
      value = parse_json(text, JsonLimits::user(), "--set " + key);
    } catch (const JsonError& e) {
      // Only text that is not JSON at all falls back to a string; a value over the limits is still an error.
      if (e.kind() != JsonError::Kind::syntax) throw;
      value = text;  // bare strings: --set model.variant=ega
    }
    EGM_REQUIRE(key.rfind("model.", 0) == 0 || key.rfind("train.", 0) == 0, ConfigError,
                "--set {}: the key must start with model. or train.", s);
    overrides[key] = value;
  }
  // The dedicated flags go in last, so --variant wins over a --set model.variant given alongside.
  if (!f.variant.empty()) overrides["model.variant"] = f.variant;
  if (f.seed >= 0) overrides["train.seed"] = f.seed;
  if (f.steps >= 0) overrides["train.max_steps"] = f.steps;
  apply_overrides(c, overrides);
  return c;
}

}  // namespace egm::cli
