// Expansion of a checked spec into its cells: one RunConfig per (grid point,
// variant, seed), in a stable order (grid points in order, then variants in
// spec order, then seeds in list order; without a grid, one point).
// A cell's config is built as: the preset, then the spec's overrides, then the
// steps / eval_interval shorthands, then the grid point's values, then the
// variant (model.variant and the options the variant fixes,
// config/variants.h), then the seed (train.seed).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "spec/experiment_spec.h"

namespace egm::spec {

struct Cell {
  std::string variant;
  uint64_t seed = 0;
  RunConfig config;
  std::string config_json;  // egm::config_text(config): what cells.config_json stores
  std::string config_hash;  // egm::config_hash(config), of config_json
  std::string key;          // "VARIANT-sSEED", with a grid "VARIANT-sSEED-gPOINT": unique in the sweep, safe in file names
  std::optional<GridPoint> point;  // the grid point (none without a grid)
};

std::vector<Cell> expand(const ExperimentSpec& spec);

// The config of one cell (throws ConfigError when it is invalid; parse_spec
// has already checked every cell of a loaded spec).
// `point` sets the grid's fields after the overrides and shorthands, before
// the variant and the seed.
RunConfig cell_config(const ExperimentSpec& spec, const std::string& variant, uint64_t seed,
                      const GridPoint* point = nullptr);

// "VARIANT-sSEED"; with a grid point, "VARIANT-sSEED-gPOINT".
std::string cell_key(const std::string& variant, uint64_t seed, const GridPoint* point = nullptr);

// Where a cell stands in the expansion's order (grid points, then variants,
// then seeds: expand's loops), as a number: the cells' `position`, which
// egm merge sets again from the union of its inputs' specs. The first of a
// variant or seed listed twice counts (a stored spec is not checked).
class CellOrder {
 public:
  explicit CellOrder(const ExperimentSpec& spec);
  // nullopt for a variant or seed the spec does not have.
  std::optional<int64_t> position(int64_t grid_point, const std::string& variant, uint64_t seed) const;

 private:
  std::map<std::string, int64_t> variant_index_;
  std::map<uint64_t, int64_t> seed_index_;
};

}  // namespace egm::spec
