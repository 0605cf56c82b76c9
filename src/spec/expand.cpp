// A spec expanded into its cells: grid points, then variants, then seeds, each
// a full run config with its key and hash (CellOrder: the same order as a lookup).
#include "spec/expand.h"

#include <fmt/format.h>

#include "config/variants.h"

namespace egm::spec {

// The key identifies a cell within its sweep (db's UNIQUE(sweep_id, key)); it must never change for a given spec.
std::string cell_key(const std::string& variant, uint64_t seed, const GridPoint* point) {
  if (point) return fmt::format("{}-s{}-g{}", variant, seed, point->index);
  return fmt::format("{}-s{}", variant, seed);
}

RunConfig cell_config(const ExperimentSpec& spec, const std::string& variant, uint64_t seed, const GridPoint* point) {
  nlohmann::json o = spec.overrides.is_object() ? spec.overrides : nlohmann::json::object();
  // The shorthands and the grid point override the spec's overrides: check_meaning refuses a field given in both.
  if (spec.steps) o["train"]["max_steps"] = *spec.steps;
  if (spec.eval_interval) o["train"]["eval_interval"] = *spec.eval_interval;
  if (point)
    for (const auto& [path, value] : point->values) {
      const size_t dot = path.find('.');
      o[path.substr(0, dot)][path.substr(dot + 1)] = value;
    }
  // The variant's own options come last: a variant is what its name says,
  // whatever the sweep-wide overrides.
  o["model"]["variant"] = variant;
  const VariantInfo info = resolve_variant(variant);  // named: items() would dangle on a temporary
  for (const auto& [key, value] : info.options.items()) o["model"][key] = value;
  // Seed last as well: only "seeds" sets it (a grid on train.seed is refused).
  o["train"]["seed"] = seed;
  RunConfig config = preset_config(spec.preset);
  apply_overrides(config, o);  // validates
  return config;
}

// Point-major, then variant, then seed: the order CellOrder::position computes and the cells' positions.
std::vector<Cell> expand(const ExperimentSpec& spec) {
  std::vector<Cell> cells;
  const std::vector<GridPoint> points = spec.points();
  cells.reserve(points.size() * spec.variants.size() * spec.seeds.size());
  for (const GridPoint& point : points) {
    const GridPoint* p = spec.grid.empty() ? nullptr : &point;
    for (const auto& variant : spec.variants) {
      // The seed is set last and nothing else follows from it (cell_config), so
      // the point's and variant's config is resolved once and each seed set in
      // a copy: at 100,000 cells, resolving each (overrides, validation) took
      // most of the expansion (results/BENCHMARKS.md).
      const RunConfig resolved = spec.seeds.empty() ? RunConfig{} : cell_config(spec, variant, spec.seeds.front(), p);
      for (uint64_t seed : spec.seeds) {
        Cell c;
        c.variant = variant;
        c.seed = seed;
        c.config = resolved;
        c.config.train.seed = seed;
        c.config_json = config_text(c.config);
        c.config_hash = config_hash_of_text(c.config_json);
        c.key = cell_key(variant, seed, p);
        if (p) c.point = point;
        cells.push_back(std::move(c));
      }
    }
  }
  return cells;
}

CellOrder::CellOrder(const ExperimentSpec& spec) {
  for (const std::string& v : spec.variants) variant_index_.emplace(v, static_cast<int64_t>(variant_index_.size()));
  for (uint64_t seed : spec.seeds) seed_index_.emplace(seed, static_cast<int64_t>(seed_index_.size()));
}

std::optional<int64_t> CellOrder::position(int64_t grid_point, const std::string& variant, uint64_t seed) const {
  const auto v = variant_index_.find(variant);
  const auto s = seed_index_.find(seed);
  if (v == variant_index_.end() || s == seed_index_.end()) return std::nullopt;
  const auto seeds = static_cast<int64_t>(seed_index_.size());
  // The index expand gives the cell: points outermost, seeds innermost.
  return (grid_point * static_cast<int64_t>(variant_index_.size()) + v->second) * seeds + s->second;
}

}  // namespace egm::spec
