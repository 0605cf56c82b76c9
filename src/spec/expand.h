// Expansion of a checked spec into its cells: one RunConfig per (variant,
// seed), in a stable order (variants in spec order, then seeds in list order).
// A cell's config is built as: the preset, then the spec's overrides, then the
// steps / eval_interval shorthands, then the variant (model.variant and the
// options the variant fixes, config/variants.h), then the seed (train.seed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "db/results_db.h"
#include "spec/experiment_spec.h"

namespace egm::spec {

struct Cell {
  std::string variant;
  uint64_t seed = 0;
  RunConfig config;
  std::string config_hash;  // egm::config_hash(config)
  std::string key;          // "VARIANT-sSEED": unique in the sweep, safe in file names
};

std::vector<Cell> expand(const ExperimentSpec& spec);

// The config of one cell (throws ConfigError when it is invalid; parse_spec
// has already checked every cell of a loaded spec).
RunConfig cell_config(const ExperimentSpec& spec, const std::string& variant, uint64_t seed);

std::string cell_key(const std::string& variant, uint64_t seed);

// The rows ResultsDb::ensure_cells takes, in the same order.
std::vector<db::CellInput> to_cell_inputs(const ExperimentSpec& spec, const std::vector<Cell>& cells);

}  // namespace egm::spec
