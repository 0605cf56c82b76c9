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

namespace {

// The config text of `resolved` for any seed, made by one dump: the text with a
// marker seed, split around the marker's digits. The seed is the only field
// that differs between the seeds of a point and variant, and a dump writes an
// unsigned integer as its decimal digits, so the text of seed s is
// before + digits(s) + after, byte for byte config_text's (a test compares
// them). Where the marker's digits are not found exactly once, every seed is
// dumped on its own.
class SeedTemplate {
 public:
  explicit SeedTemplate(RunConfig resolved) : config_(std::move(resolved)) {
    config_.train.seed = kMarker;
    const std::string text = config_text(config_);
    const std::string digits = std::to_string(kMarker);
    const size_t at = text.find(digits);
    if (at == std::string::npos || text.find(digits, at + 1) != std::string::npos) return;
    before_ = text.substr(0, at);
    after_ = text.substr(at + digits.size());
    split_ = true;
  }
  std::string text(uint64_t seed) {
    if (split_) return fmt::format("{}{}{}", before_, seed, after_);
    config_.train.seed = seed;
    return config_text(config_);
  }

 private:
  // A seed no spec can hold (the schema keeps seeds at or below 2^53 - 1): the
  // largest prime below 2^64.
  static constexpr uint64_t kMarker = 18446744073709551557ULL;
  RunConfig config_;
  std::string before_, after_;
  bool split_ = false;
};

}  // namespace

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
      // Its text is dumped once too (SeedTemplate): at 100,000 cells a dump
      // per cell took 0.6 s of a 6 s launch.
      if (spec.seeds.empty()) continue;
      const RunConfig resolved = cell_config(spec, variant, spec.seeds.front(), p);
      SeedTemplate texts(resolved);
      for (uint64_t seed : spec.seeds) {
        Cell c;
        c.variant = variant;
        c.seed = seed;
        c.config = resolved;
        c.config.train.seed = seed;
        c.config_json = texts.text(seed);
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
